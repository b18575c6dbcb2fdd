#!/usr/bin/env python3
"""An agent CLI that ignores SIGTERM and leaves a child that ignores it too.

Usage: stubborn.py PID_FILE; writes "<own pid> <child pid>" there, then hangs.
"""

import os
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = os.fork()
if child == 0:
    time.sleep(300)
    os._exit(0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.getpid()} {child}")
print("working...", flush=True)
time.sleep(300)
