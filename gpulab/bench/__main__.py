"""``python -m gpulab.bench`` / ``torchrun -m gpulab.bench``: see :mod:`gpulab.bench`."""
import sys

from . import main

sys.exit(main())
