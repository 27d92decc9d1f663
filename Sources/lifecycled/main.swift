import LifecycleDaemon

_ = SysExit.ok
