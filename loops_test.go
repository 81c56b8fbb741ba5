package koordletyarn

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/koordlet-yarn/koordlet-yarn/framework/yarn"
	"github.com/koordlet-yarn/koordlet-yarn/test/rmemu"
)

// blockedRM is an emulated ResourceManager whose answers to a node's
// resource update wait until release is closed; entered gets one value per
// update that arrived, canceled one per update given up by koordlet.
type blockedRM struct {
	*rmemu.RM
	entered, canceled chan struct{}
	release           chan struct{}
}

func (b *blockedRM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/resource") && r.Method == http.MethodPost {
		// Read to the end: the server then notices a client that gives up.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
			b.canceled <- struct{}{}
			return
		}
	}
	b.RM.ServeHTTP(w, r)
}

// TestRunDoesNotWaitForTheRM (issue 55, item 5): koordlet runs each
// strategy's Run in turn, the framework's among them; with
// YARNRMNodeResourceSync off and a record of YARN's own capacity on the
// node, the framework gives it back to the RM. The code before did so
// inside Run, waiting up to twice the RM timeout (60 s) for a slow or down
// RM while every strategy after it, upstream's eviction included, waited
// too. Run now returns while the RM still holds the request; the give-back
// goes on in the background, /yarn/restore counts it pending until the RM
// took it, and koordlet's stop ends it (the record stays for the next
// start).
func TestRunDoesNotWaitForTheRM(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	const node = "nm:45454"
	own := yarn.NodeResource{MemoryMB: 8192, VCores: 8}
	for _, stop := range []bool{false, true} {
		t.Run(map[bool]string{false: "the RM answers", true: "koordlet stops"}[stop], func(t *testing.T) {
			rm := &blockedRM{RM: rmemu.New(), entered: make(chan struct{}, 4), canceled: make(chan struct{}, 4), release: make(chan struct{})}
			rm.RegisterNode(node, yarn.NodeResource{MemoryMB: 4096, VCores: 4}) // koordlet's push
			srv := httptest.NewServer(rm)
			t.Cleanup(srv.Close)
			t.Cleanup(func() {
				select {
				case <-rm.release:
				default:
					close(rm.release)
				}
			})

			fw, err := install(flag.NewFlagSet("koordlet", flag.ContinueOnError), prometheus.NewRegistry())
			require.NoError(t, err)
			fw.Config.RM.Endpoints = []string{srv.URL}
			fw.Config.RM.User = "yarn"
			fw.Config.RM.Timeout = 10 * time.Minute // only koordlet's stop ends the request
			record := filepath.Join(t.TempDir(), "yarn-rm-node-resource.json")
			require.NoError(t, os.WriteFile(record, []byte(`{"nodeId":"`+node+`","own":{"memory":8192,"vCores":8},"since":"2026-11-27T00:00:00Z"}`), 0o644))
			fw.Config.Ledger.RMCapacityRecord = record
			rmPending := func() int {
				for _, k := range fw.restoreStatus().Kinds {
					if k.Kind == "rm-capacity" {
						require.True(t, k.Off)
						return k.Pending
					}
				}
				t.Fatal("no rm-capacity kind")
				return 0
			}
			// The RM's loops alone (the others touch the node).
			var loops []Loop
			for _, l := range fw.loops {
				if strings.Contains(l.Name(), "ResourceManager") {
					loops = append(loops, l)
				}
			}
			require.NotEmpty(t, loops)
			fw.loops = loops

			stopCh := make(chan struct{})
			ran := make(chan struct{})
			go func() {
				defer close(ran)
				(&loopRunner{fw: fw}).Run(stopCh)
			}()
			<-rm.entered // the give-back reached the RM, which holds it
			<-ran        // Run returned all the same
			assert.Equal(t, 1, rmPending(), "pending while the RM has not taken it")

			if stop {
				close(stopCh)
				<-rm.canceled // koordlet's stop ends the request
				assert.Equal(t, 1, rmPending(), "the record stays for the next start")
				got, _ := rm.Node(node)
				assert.NotEqual(t, own, got)
				return
			}
			close(rm.release)
			require.Eventually(t, func() bool { return rmPending() == 0 }, time.Minute, 10*time.Millisecond, "given back once the RM answers")
			got, _ := rm.Node(node)
			assert.Equal(t, own, got)
			close(stopCh)
		})
	}
}
