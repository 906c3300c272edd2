import sys

from morl_robot.cli import main

sys.exit(main())
