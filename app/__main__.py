import sys

from softsim.app.cli import main

sys.exit(main())
