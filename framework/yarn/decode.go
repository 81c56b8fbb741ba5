package yarn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"k8s.io/klog/v2"
)

// DecodeContainers decodes the body of the NodeManager's
// GET /ws/v1/node/containers. It accepts every shape NMs of different Hadoop
// versions send: {"containers":{"container":[...]}}, a single object where the
// list is expected, null, an empty object or an empty string for "no
// containers", numbers rendered as strings, and unknown extra fields. An entry
// whose id is not a valid container id is dropped and logged; only a
// malformed document (or an NM error document) is an error.
func DecodeContainers(r io.Reader) ([]NMContainer, error) {
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read NM containers body: %w", err)
	}
	return decodeContainers(body)
}

func decodeContainers(body []byte) ([]NMContainer, error) {
	var doc struct {
		Containers      containersField `json:"containers"`
		RemoteException *struct {
			Exception string `json:"exception"`
			Message   string `json:"message"`
		} `json:"RemoteException"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode NM containers document: %w", err)
	}
	if doc.RemoteException != nil {
		return nil, fmt.Errorf("NM returned %s: %s", doc.RemoteException.Exception, doc.RemoteException.Message)
	}
	raw := doc.Containers.list
	out := make([]NMContainer, 0, len(raw))
	for i := range raw {
		rc := &raw[i]
		id, err := ParseContainerID(rc.ID)
		if err != nil {
			klog.Warningf("yarn: dropping NM container entry %d: %v", i, err)
			continue
		}
		out = append(out, NMContainer{
			ID:                  id,
			State:               rc.State,
			User:                rc.User,
			ExitCode:            int(rc.ExitCode),
			Diagnostics:         rc.Diagnostics,
			TotalMemoryNeededMB: int64(rc.TotalMemoryNeededMB),
			TotalVCoresNeeded:   int64(rc.TotalVCoresNeeded),
			ExecutionType:       rc.ExecutionType,
		})
	}
	return out, nil
}

type rawContainer struct {
	ID                  string  `json:"id"`
	State               string  `json:"state"`
	User                string  `json:"user"`
	ExitCode            flexInt `json:"exitCode"`
	Diagnostics         string  `json:"diagnostics"`
	TotalMemoryNeededMB flexInt `json:"totalMemoryNeededMB"`
	TotalVCoresNeeded   flexInt `json:"totalVCoresNeeded"`
	ExecutionType       string  `json:"executionType"`
}

// containersField is the value of "containers": null, "", {}, or
// {"container": <list or single object or null or "">}.
type containersField struct {
	list []rawContainer
}

func (c *containersField) UnmarshalJSON(b []byte) error {
	if isEmptyValue(b) {
		return nil
	}
	if b[0] != '{' {
		return fmt.Errorf("\"containers\" must be an object, got %.20s", b)
	}
	var inner struct {
		Container containerList `json:"container"`
	}
	if err := json.Unmarshal(b, &inner); err != nil {
		return err
	}
	c.list = inner.Container.list
	return nil
}

var idKey = []byte(`"id"`)

// containerList is the value of "container": a list, a single object, or
// an empty value.
type containerList struct {
	list []rawContainer
}

func (c *containerList) UnmarshalJSON(b []byte) error {
	if isEmptyValue(b) {
		return nil
	}
	switch b[0] {
	case '[':
		// Size the list once: every entry has an "id" key (an upper bound,
		// since the key may also appear inside values).
		c.list = make([]rawContainer, 0, bytes.Count(b, idKey))
		return json.Unmarshal(b, &c.list)
	case '{':
		var one rawContainer
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		c.list = []rawContainer{one}
		return nil
	}
	return fmt.Errorf("\"container\" must be a list or an object, got %.20s", b)
}

// isEmptyValue reports whether b (a JSON value without surrounding space) is
// null, "" or {}.
func isEmptyValue(b []byte) bool {
	switch string(b) {
	case "null", `""`, "{}":
		return true
	}
	return len(b) > 1 && b[0] == '{' && len(bytes.TrimSpace(b[1:len(b)-1])) == 0
}

// flexInt decodes a JSON number or a number rendered as a string (older
// Jersey "mapped" notation), and treats null or "" as 0.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := b
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if len(s) == 0 || string(s) == "null" {
		*f = 0
		return nil
	}
	v, err := strconv.ParseInt(string(s), 10, 64)
	if err != nil {
		fv, ferr := strconv.ParseFloat(string(s), 64)
		if ferr != nil {
			return fmt.Errorf("not a number: %.30s", b)
		}
		v = int64(fv)
	}
	*f = flexInt(v)
	return nil
}
