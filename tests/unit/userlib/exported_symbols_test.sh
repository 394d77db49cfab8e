#!/bin/sh
# libjal exports its public API only (docs/userlib.md, "What libjal exports"): lists the
# dynamic symbols the shared library defines and fails if one of them is not public — not
# the C API (jal_*), not in a public C++ namespace or class of include/jal, or internal
# even so (a detail namespace, an Impl class, std:: instantiations, the ISA library).
# Usage: exported_symbols_test.sh path/to/libjal.so
set -eu
lib="$1"
all=$(nm -D --defined-only --just-symbols "$lib" | c++filt | sort -u)
echo "$all" | sed 's/^/  /'
echo "$(echo "$all" | wc -l) symbols exported by $lib"

public='^(jal_[a-z0-9_]+$'
public="$public|jal::(ChipFunction|Error)::"
public="$public|jal::(state_name|format_fw_version)(\\[abi:cxx11\\])?\\("
public="$public|jal::(kernels|model|collectives)::"
public="$public|(typeinfo|typeinfo name|vtable) for jal::(Error$|kernels::|model::))"
internal='(^|[^a-z_])(detail|internal)::|::Impl\b|^std::|^(typeinfo|typeinfo name|vtable) for std::|^jal::(isa|runtime|backend|admin|kmd|rt)::'

bad=$(echo "$all" | grep -Ev "$public" || true)
# Judged by the symbol's own name, not its parameter types (a public class may take a
# std::unique_ptr<Impl> in a private constructor).
leaked=$(echo "$all" | grep -E "$public" | sed 's/(.*//' | grep -E "$internal" || true)
status=0
if [ -n "$bad" ]; then
    echo "FAIL: exported symbols outside the public API:"
    echo "$bad" | sed 's/^/  /'
    status=1
fi
if [ -n "$leaked" ]; then
    echo "FAIL: internal symbols exported:"
    echo "$leaked" | sed 's/^/  /'
    status=1
fi
# The public API is there.
for want in 'jal_device_open' 'jal_model_open' 'jal_queue_dispatch' \
    'jal::ChipFunction::open(' 'jal::kernels::Builder::' 'jal::model::GgufFile::'; do
    if ! echo "$all" | grep -qF "$want"; then
        echo "FAIL: $want is not exported"
        status=1
    fi
done
exit $status
