#!/bin/sh
# Stands in for an nvdisasm that cannot read its cubin.
echo "nvdisasm fatal   : Input file is not a supported cubin"
exit 1
