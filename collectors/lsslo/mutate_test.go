package lsslo

import (
	"math/rand"
	"testing"
	"time"
)

// TestDecodeMutations: mutated bodies (bytes changed, cut, inserted) never
// make Decode panic or hang, and what it returns is a histogram (the fuzz
// target's check, deterministic and quick).
func TestDecodeMutations(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	seeds := [][]byte{[]byte(textBody), []byte(omBody)}
	cts := []string{textCT, omCT, "", "application/openmetrics-text; version=", "text/plain; version=0.0.4\x00"}
	for i := 0; i < 5000; i++ {
		b := append([]byte(nil), seeds[r.Intn(2)]...)
		for k := r.Intn(4) + 1; k > 0 && len(b) > 0; k-- {
			switch r.Intn(3) {
			case 0:
				b[r.Intn(len(b))] = byte(r.Intn(256))
			case 1:
				j := r.Intn(len(b))
				b = b[:j]
			case 2:
				j := r.Intn(len(b))
				b = append(b[:j], append([]byte{byte(r.Intn(256))}, b[j:]...)...)
			}
		}
		ct := cts[r.Intn(len(cts))]
		done := make(chan struct{})
		go func() {
			defer close(done)
			if got, err := Decode(b, ct, "lat_seconds", nil, 50); err == nil {
				if cerr := got.check(); cerr != nil {
					t.Errorf("body %q: %v", b, cerr)
				}
			}
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("hang: ct %q body %q", ct, b)
		}
	}
}
