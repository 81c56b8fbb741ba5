package yarninformer

// RequestResync asks for a full resync as soon as the resync loop is free,
// ahead of the next periodic one: an event source may have lost events (a
// full ring buffer, an inotify overflow, a YARN root made again, a source
// restarted). Requests made while one is pending are one request. It never
// blocks; before Start or with the plugin disabled it does nothing.
func (p *Plugin) RequestResync() {
	select {
	case p.resyncReq <- struct{}{}:
	default:
	}
}
