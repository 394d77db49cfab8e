/* Hangs the firmware's main loop (admin DEBUG_FAULT, privileged) through jal.ko, so that the
 * system test sees the chip's watchdog reset it and the driver set it up again. The command
 * itself never completes: the ioctl returns once the driver sees the reset (ECONNRESET) or
 * its admin timeout passes.
 *
 *   jal-system-hang /dev/jal0      exit 0 when the ioctl returned; 1 on a usage error */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jal/hw/admin.h>
#include <uapi/jal_accel.h>

int main(int argc, char** argv)
{
    struct jal_ioctl_admin a;
    int fd, ret;

    if (argc != 2) {
        fprintf(stderr, "usage: jal-system-hang /dev/jalN\n");
        return 1;
    }
    fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.opcode = JAL_ADMIN_DEBUG_FAULT;
    a.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    ret = ioctl(fd, JAL_IOCTL_ADMIN, &a);
    printf("DEBUG_FAULT hang: ioctl returned %d (%s)\n", ret, ret < 0 ? strerror(errno) : "ok");
    close(fd);
    return 0;
}
