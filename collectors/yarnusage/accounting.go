package yarnusage

import (
	"path/filepath"
	"strings"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"
)

// Accounting says whether YARN usage is counted as BE usage by koordlet.
// Upstream subtracts the usage of NodeSLO host applications from "system"
// usage and counts BE host applications as BE; YARN containers are counted
// right only when a BE host application covers the YARN hierarchy.
type Accounting struct {
	// AsBE is true when a BE host application covers the YARN hierarchy.
	AsBE bool `json:"asBE"`
	// HostApplication is the covering host application's name.
	HostApplication string `json:"hostApplication,omitempty"`
	// Reason explains AsBE=false.
	Reason string `json:"reason,omitempty"`
}

// CheckAccounting reports whether slo declares a BE host application whose
// cgroup is the YARN hierarchy dir or one of its ancestors.
func CheckAccounting(slo *slov1alpha1.NodeSLO, hierarchy string) Accounting {
	if slo == nil {
		return Accounting{Reason: "the node has no NodeSLO yet"}
	}
	for i := range slo.Spec.HostApplications {
		app := &slo.Spec.HostApplications[i]
		dir := filepath.Clean(koordletutil.GetHostAppCgroupRelativePath(app))
		if dir == "." || !(hierarchy == dir || strings.HasPrefix(hierarchy, dir+"/")) {
			continue
		}
		if app.QoS != extension.QoSBE {
			return Accounting{HostApplication: app.Name, Reason: "host application " + app.Name +
				" covers the YARN hierarchy but its QoS is " + string(app.QoS) + ", not BE"}
		}
		// koordlet counts a host application as BE only when it is based in
		// the besteffort cgroup (qosmanager helpers.NonBEHostAppFilter).
		if app.CgroupPath == nil || app.CgroupPath.Base != slov1alpha1.CgroupBaseTypeKubeBesteffort {
			return Accounting{HostApplication: app.Name, Reason: "host application " + app.Name +
				" covers the YARN hierarchy but koordlet counts a host application as BE only with cgroupPath.base KubepodsBesteffort"}
		}
		return Accounting{AsBE: true, HostApplication: app.Name}
	}
	return Accounting{Reason: "no BE host application in the NodeSLO covers the YARN hierarchy " + hierarchy +
		"; YARN usage is counted as system usage, which shrinks batch capacity and over-suppresses BE"}
}
