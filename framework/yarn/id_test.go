package yarn

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseContainerIDValid(t *testing.T) {
	tests := []struct {
		in   string
		want ContainerID
		app  string
		am   bool
	}{
		{"container_e17_1700000000000_0042_01_000007", ContainerID{17, 1700000000000, 42, 1, 7}, "application_1700000000000_0042", false},
		{"container_1700000000000_0042_01_000001", ContainerID{0, 1700000000000, 42, 1, 1}, "application_1700000000000_0042", true},
		{"container_e100_1700000000000_12345_123_1234567", ContainerID{100, 1700000000000, 12345, 123, 1234567}, "application_1700000000000_12345", false},
		{"container_e05_1_0001_01_000001", ContainerID{5, 1, 1, 1, 1}, "application_1_0001", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, err := ParseContainerID(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, id)
			assert.Equal(t, tt.in, id.String())
			assert.Equal(t, tt.app, id.ApplicationID())
			assert.Equal(t, tt.am, id.IsApplicationMaster())
			again, err := ParseContainerID(id.String())
			require.NoError(t, err)
			assert.Equal(t, id, again)
			assert.True(t, IsCanonical(tt.in))
		})
	}
}

// TestParseContainerIDNonCanonical: YARN (ContainerId.toString) pads the
// application id to at least 4 digits, the attempt and the epoch to at least
// 2, the sequence to at least 6, and never beyond; the cluster timestamp is
// not padded. A string with more leading zeros, or a number YARN's id cannot
// hold (so it would print otherwise), is not the container it resembles:
// rejected, so it can never stand for (and overwrite) that container.
func TestParseContainerIDNonCanonical(t *testing.T) {
	for _, s := range []string{
		"container_1700000000000_0001_01_0000002",      // exec 2 with one more zero
		"container_1700000000000_0001_01_0000000002",   // and more
		"container_e00_1700000000000_0042_01_000007",   // epoch 0 is not printed
		"container_e017_1700000000000_0042_01_000007",  // epoch padded beyond 2
		"container_1700000000000_00042_01_000007",      // app padded beyond 4
		"container_1700000000000_010000_01_000007",     // app 10000 has 5 digits, no padding
		"container_1700000000000_0042_001_000007",      // attempt padded beyond 2
		"container_01700000000000_0042_01_000007",      // timestamp is never padded
		"container_1700000000000_2147483648_01_000007", // app id beyond YARN's int
		"container_1700000000000_0042_2147483648_000007",
		"container_1700000000000_0042_01_1099511627776",      // sequence beyond its 40 bits
		"container_e8388608_1700000000000_0042_01_000007",    // epoch beyond its 23 bits
		"container_e2147483648_1700000000000_0042_01_000007", // beyond YARN's int
	} {
		_, err := ParseContainerID(s)
		assert.ErrorIs(t, err, ErrInvalidContainerID, s)
		assert.False(t, IsCanonical(s), s)
	}
	// The widest values YARN prints are canonical.
	for _, s := range []string{
		"container_1700000000000_10000_01_000001",
		"container_1700000000000_2147483647_2147483647_1099511627775",
		"container_e8388607_1700000000000_0042_01_1234567",
		"container_0_0000_00_000000",
	} {
		id, err := ParseContainerID(s)
		require.NoError(t, err, s)
		assert.Equal(t, s, id.String())
	}
}

func TestParseContainerIDInvalid(t *testing.T) {
	for _, s := range []string{
		"",
		"container_",
		"container",
		"application_1700000000000_0042",
		"Container_1700000000000_0042_01_000007",
		"container_E17_1700000000000_0042_01_000007",
		"container_e7_1700000000000_0042_01_000007",     // epoch < 2 digits
		"container_1700000000000_042_01_000007",         // app < 4 digits
		"container_1700000000000_0042_1_000007",         // attempt < 2 digits
		"container_1700000000000_0042_01_00007",         // sequence < 6 digits
		"container_1700000000000_0042_01",               // too few fields
		"container_e17_1700000000000_0042_01_000007_1",  // too many fields
		"container_1700000000000_0042_01_000007_",       // trailing underscore
		"container_x1_1700000000000_0042_01_000007",     // not an epoch
		"container_1700000000000_0042_01_000007/../x",   // path
		"container_../../etc_0042_01_000007",            // path
		"container_1700000000000_0042_01_-00007",        // sign
		"container_1700000000000_0042_01_+000007",       // sign
		"container_1700000000000_0042_01_ 000007",       // space
		"container_1700000000000_0042_01_000007\n",      // newline
		"container_1700000000000_0042_01_٠٠٠٠٠٧",        // non-ASCII digits
		"container_99999999999999999999_0042_01_000007", // overflow
		"container__0042_01_000007",                     // empty field
	} {
		_, err := ParseContainerID(s)
		assert.ErrorIs(t, err, ErrInvalidContainerID, "%q", s)
		assert.False(t, IsCanonical(s), "%q", s)
	}
}

func FuzzParseContainerID(f *testing.F) {
	f.Add("container_e17_1700000000000_0042_01_000007")
	f.Add("container_1700000000000_0042_01_000001")
	f.Add("container_../x_0042_01_000001")
	f.Add("container_1700000000000_0001_01_0000002")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseContainerID(s)
		if err != nil {
			return
		}
		if strings.ContainsAny(s, "/.\x00 ") {
			t.Fatalf("accepted a path-like id %q", s)
		}
		if id.String() != s {
			t.Fatalf("accepted %q, which is not the canonical %q", s, id.String())
		}
		again, err := ParseContainerID(id.String())
		if err != nil || again != id {
			t.Fatalf("round trip of %q: %v %v", s, again, err)
		}
	})
}
