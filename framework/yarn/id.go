// Package yarn holds the Hadoop YARN entity model: container ids, the
// NodeManager REST payloads and a client for them.
package yarn

import (
	"errors"
	"fmt"
	"strconv"
)

const (
	containerPrefix   = "container_"
	applicationPrefix = "application_"

	minEpochDigits    = 2
	minAppDigits      = 4
	minAttemptDigits  = 2
	minSequenceDigits = 6

	// The largest values YARN's ContainerId can hold and print back: the
	// application and attempt ids are Java ints, the container id is a long
	// whose lower 40 bits are the sequence and whose upper bits the epoch
	// (epoch << 40 stays positive below 2^23). A larger number would print
	// as another id, so it is not any container's.
	maxAppID    = 1<<31 - 1
	maxAttempt  = 1<<31 - 1
	maxSequence = 1<<40 - 1
	maxEpoch    = 1<<23 - 1
)

// ContainerID is a parsed YARN container id:
// container_[e<epoch>_]<clusterTimestamp>_<appId>_<attemptId>_<containerSeq>.
type ContainerID struct {
	Epoch            int64
	ClusterTimestamp int64
	AppID            int64
	AttemptID        int64
	Sequence         int64
}

// ErrInvalidContainerID is wrapped by every error ParseContainerID returns.
var ErrInvalidContainerID = errors.New("invalid YARN container id")

// ErrNonCanonicalContainerID is wrapped (with ErrInvalidContainerID) by the
// error for a string that parses to an id but is not how YARN prints it.
var ErrNonCanonicalContainerID = errors.New("not canonical")

// ParseContainerID parses s strictly: it accepts exactly the strings YARN's
// ContainerId.toString prints, and so is the one rule for every id koordlet
// takes in (the NM's list, cgroup directory names, a process's CONTAINER_ID,
// the RM's answers). Only ASCII digits, the "container_" prefix, an optional
// "e<epoch>" field and underscores are accepted, so a string that parses can
// never name a path outside its directory. Each number has its minimum width
// (epoch 2, appId 4, attempt 2, sequence 6; the cluster timestamp none) and
// is wider only when its value needs the digits: a string with more leading
// zeros ("..._0000002", "e00", "e017") only resembles a container and is
// rejected with ErrNonCanonicalContainerID, as is a number YARN's id cannot
// hold (an application or attempt id beyond int32, a sequence beyond 40
// bits, an epoch beyond 23). So s is accepted if and only if
// ParseContainerID(s).String() == s.
func ParseContainerID(s string) (ContainerID, error) {
	id, err := parseContainerID(s)
	if err != nil {
		return ContainerID{}, err
	}
	if id.AppID > maxAppID || id.AttemptID > maxAttempt || id.Sequence > maxSequence || id.Epoch > maxEpoch {
		return ContainerID{}, fmt.Errorf("%w %q: %w: a number beyond what YARN's container id holds", ErrInvalidContainerID, s, ErrNonCanonicalContainerID)
	}
	// The canonical form is built on the stack: it is named in the error
	// by id.String(), so that the buffer never escapes (this runs for every
	// id of every resync).
	var buf [96]byte
	if string(id.AppendTo(buf[:0])) != s {
		return ContainerID{}, fmt.Errorf("%w %q: %w (YARN writes %s)", ErrInvalidContainerID, s, ErrNonCanonicalContainerID, id.String())
	}
	return id, nil
}

// parseContainerID parses the fields of s, allowing extra leading zeros.
func parseContainerID(s string) (ContainerID, error) {
	var id ContainerID
	if len(s) <= len(containerPrefix) || s[:len(containerPrefix)] != containerPrefix {
		return id, fmt.Errorf("%w %q: missing %q prefix", ErrInvalidContainerID, s, containerPrefix)
	}
	rest := s[len(containerPrefix):]
	var fields [5]string
	n := 0
	for n < len(fields) {
		i := indexByte(rest, '_')
		if i < 0 {
			fields[n] = rest
			n++
			rest = ""
			break
		}
		fields[n] = rest[:i]
		rest = rest[i+1:]
		n++
	}
	if rest != "" || n < 4 {
		return id, fmt.Errorf("%w %q: want 4 or 5 underscore-separated fields", ErrInvalidContainerID, s)
	}
	nums := fields[:n]
	if n == 5 {
		epoch := nums[0]
		if len(epoch) < 1 || epoch[0] != 'e' {
			return id, fmt.Errorf("%w %q: five fields but the first is not an epoch (e<digits>)", ErrInvalidContainerID, s)
		}
		v, err := parseField(epoch[1:], minEpochDigits, "epoch")
		if err != nil {
			return id, fmt.Errorf("%w %q: %v", ErrInvalidContainerID, s, err)
		}
		id.Epoch = v
		nums = nums[1:]
	}
	specs := [4]struct {
		dst   *int64
		min   int
		label string
	}{
		{&id.ClusterTimestamp, 1, "cluster timestamp"},
		{&id.AppID, minAppDigits, "application id"},
		{&id.AttemptID, minAttemptDigits, "attempt id"},
		{&id.Sequence, minSequenceDigits, "container sequence"},
	}
	for i, spec := range specs {
		v, err := parseField(nums[i], spec.min, spec.label)
		if err != nil {
			return ContainerID{}, fmt.Errorf("%w %q: %v", ErrInvalidContainerID, s, err)
		}
		*spec.dst = v
	}
	return id, nil
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// parseField parses an unsigned decimal of at least min digits.
func parseField(s string, min int, label string) (int64, error) {
	if len(s) < min {
		return 0, fmt.Errorf("%s %q has fewer than %d digits", label, s, min)
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s %q is not a decimal number", label, s)
		}
		d := int64(c - '0')
		if v > (1<<63-1-d)/10 {
			return 0, fmt.Errorf("%s %q overflows int64", label, s)
		}
		v = v*10 + d
	}
	return v, nil
}

// String returns the canonical Hadoop form of the id.
func (id ContainerID) String() string {
	return string(id.AppendTo(make([]byte, 0, 48)))
}

// AppendTo appends the canonical form of the id to b.
func (id ContainerID) AppendTo(b []byte) []byte {
	b = append(b, containerPrefix...)
	if id.Epoch > 0 {
		b = append(b, 'e')
		b = appendPadded(b, id.Epoch, minEpochDigits)
		b = append(b, '_')
	}
	b = strconv.AppendInt(b, id.ClusterTimestamp, 10)
	b = append(b, '_')
	b = appendPadded(b, id.AppID, minAppDigits)
	b = append(b, '_')
	b = appendPadded(b, id.AttemptID, minAttemptDigits)
	b = append(b, '_')
	return appendPadded(b, id.Sequence, minSequenceDigits)
}

// ApplicationID returns the id of the application the container belongs to:
// application_<clusterTimestamp>_<appId, at least 4 digits>.
func (id ContainerID) ApplicationID() string {
	b := make([]byte, 0, 32)
	b = append(b, applicationPrefix...)
	b = strconv.AppendInt(b, id.ClusterTimestamp, 10)
	b = append(b, '_')
	return string(appendPadded(b, id.AppID, minAppDigits))
}

// IsApplicationMaster reports whether the container is the (managed)
// ApplicationMaster of its attempt: container sequence 1.
func (id ContainerID) IsApplicationMaster() bool {
	return id.Sequence == 1
}

// IsCanonical reports whether s is exactly the canonical form of a valid
// container id (no extra leading zeros, no "e00" epoch): whether
// ParseContainerID accepts it. Paths are only ever built from canonical
// names.
func IsCanonical(s string) bool {
	_, err := ParseContainerID(s)
	return err == nil
}

func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	digits := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(digits); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}
