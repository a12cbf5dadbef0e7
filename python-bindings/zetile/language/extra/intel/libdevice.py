from ..libdevice import *  # noqa: F401,F403
