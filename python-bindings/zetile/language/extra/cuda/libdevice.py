from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __getattr__  # noqa: F401,E402 - the same message for a missing name
