// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwmon: package power and temperatures from the firmware's telemetry table, so standard
 * tools (sensors) see them. Each read asks the firmware for a fresh sample.
 */
#include <linux/hwmon.h>

#include "jal_drv.h"

enum { JAL_TEMP_JUNCTION, JAL_TEMP_HBM };

static const char *const jal_temp_labels[] = { "junction", "hbm" };

static umode_t jal_hwmon_is_visible(const void *data,
				    enum hwmon_sensor_types type, u32 attr,
				    int channel)
{
	return 0444;
}

static int jal_hwmon_read(struct device *dev, enum hwmon_sensor_types type,
			  u32 attr, int channel, long *val)
{
	struct jal_device *jdev = dev_get_drvdata(dev);
	struct jal_telemetry t;
	int ret;

	mutex_lock(&jdev->lock);
	ret = jal_admin_telemetry(jdev, &t);
	mutex_unlock(&jdev->lock);
	if (ret)
		return ret;

	if (type == hwmon_power) {
		switch (attr) {
		case hwmon_power_input:
			*val = (long)t.power_mw * 1000;
			return 0;
		case hwmon_power_average:
			*val = (long)t.power_avg_mw * 1000;
			return 0;
		case hwmon_power_cap:
			*val = (long)t.power_limit_mw * 1000;
			return 0;
		}
		return -EOPNOTSUPP;
	}
	switch (attr) {
	case hwmon_temp_input:
		*val = channel == JAL_TEMP_JUNCTION ? t.temp_junction_mc :
						      t.temp_hbm_mc;
		return 0;
	case hwmon_temp_crit:
		*val = t.temp_limit_mc;
		return 0;
	}
	return -EOPNOTSUPP;
}

static int jal_hwmon_read_string(struct device *dev,
				 enum hwmon_sensor_types type, u32 attr,
				 int channel, const char **str)
{
	if (type != hwmon_temp || attr != hwmon_temp_label)
		return -EOPNOTSUPP;
	*str = jal_temp_labels[channel];
	return 0;
}

static const struct hwmon_channel_info *jal_hwmon_info[] = {
	HWMON_CHANNEL_INFO(power,
			   HWMON_P_INPUT | HWMON_P_AVERAGE | HWMON_P_CAP),
	HWMON_CHANNEL_INFO(temp, HWMON_T_INPUT | HWMON_T_CRIT | HWMON_T_LABEL,
			   HWMON_T_INPUT | HWMON_T_LABEL),
	NULL
};

static const struct hwmon_ops jal_hwmon_ops = {
	.is_visible = jal_hwmon_is_visible,
	.read = jal_hwmon_read,
	.read_string = jal_hwmon_read_string,
};

static const struct hwmon_chip_info jal_hwmon_chip = {
	.ops = &jal_hwmon_ops,
	.info = jal_hwmon_info,
};

int jal_hwmon_init(struct jal_device *jdev)
{
	struct device *dev = &jdev->pdev->dev;

	jdev->hwmon = hwmon_device_register_with_info(dev, DRIVER_NAME, jdev,
						      &jal_hwmon_chip, NULL);
	if (IS_ERR(jdev->hwmon)) {
		int ret = PTR_ERR(jdev->hwmon);

		dev_err(dev, "Failed to register hwmon: %d\n", ret);
		return ret;
	}
	return 0;
}

void jal_hwmon_fini(struct jal_device *jdev)
{
	hwmon_device_unregister(jdev->hwmon);
}
