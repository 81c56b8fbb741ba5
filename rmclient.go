package koordletyarn

import (
	"sync"

	"k8s.io/klog/v2"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
)

// rmClient builds the ResourceManager client from the parsed flags once.
type rmClient struct {
	once   sync.Once
	client *yarn.RMClient
}

// RMClient returns the shared ResourceManager client configured by
// --yarn-rm-*, or nil when no RM endpoint is configured (or the flags are
// invalid, which Validate reports). Call it after the flags are parsed.
func (fw *Framework) RMClient() *yarn.RMClient {
	fw.rm.client.once.Do(func() {
		c, err := fw.Config.RM.Client()
		if err != nil {
			klog.Errorf("yarn: no ResourceManager client: %v", err)
			return
		}
		fw.rm.client.client = c
	})
	return fw.rm.client.client
}
