#!/bin/sh
# Stands in for nvdisasm in disassembly_test: checks its arguments (-c and a non-empty cubin file)
# and prints the listing beside it.
[ "$1" = "-c" ] && [ -s "$2" ] || { echo "fake_nvdisasm: expected -c FILE, got: $*"; exit 2; }
exec /bin/cat "${0%/*}/nvdisasm_listing.txt"
