package yarnadopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/koordlet-yarn/koordlet-yarn/framework/store"
)

// Status reads the snapshot the adopter's work published: it returns while
// that work holds its lock (a scan's cgroup writes and /proc reads), where
// /yarn/containers used to wait behind all of it.
func TestStatusNeverWaitsForTheWork(t *testing.T) {
	a := New(Options{Store: store.New()})
	a.mu.Lock()
	a.adoptions["container_1700000000000_0001_01_000002"] = &Adoption{Cgroup: "x"}
	done := make(chan Status, 1)
	go func() { done <- a.Status() }()
	select {
	case s := <-done:
		assert.Empty(t, s.Containers, "what is not published yet is not seen")
	case <-time.After(10 * time.Second):
		t.Fatal("Status waited for the adopter's work")
	}
	a.publish()
	a.mu.Unlock()
	assert.Contains(t, a.Status().Containers, "container_1700000000000_0001_01_000002")
}
