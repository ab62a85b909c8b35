#!/usr/bin/env python3
"""reldiff.py A B: the relative L2 distance of two --save-params files (raw
float32), |A - B| / |B|; exit 1 when their sizes differ or they are empty."""
import array
import math
import sys

a, b = (array.array('f', open(p, 'rb').read()) for p in sys.argv[1:3])
if len(a) != len(b) or not a:
    print('sizes %d %d' % (len(a), len(b)))
    sys.exit(1)
d = sum((x - y) ** 2 for x, y in zip(a, b))
n = sum(y * y for y in b)
print('%.3g' % math.sqrt(d / n))
