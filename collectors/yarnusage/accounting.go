package yarnusage

import (
	"path/filepath"
	"strings"

	"github.com/koordinator-sh/koordinator/apis/extension"
	slov1alpha1 "github.com/koordinator-sh/koordinator/apis/slo/v1alpha1"
	koordletutil "github.com/koordinator-sh/koordinator/pkg/koordlet/util"

	"github.com/koordlet-yarn/koordlet-yarn/framework/features"
)

// Accounting says whether YARN usage is counted as BE usage by koordlet.
// Upstream subtracts the usage of NodeSLO host applications from "system"
// usage and counts BE host applications as BE; YARN containers are counted
// right only when a BE host application covers the YARN hierarchy.
type Accounting struct {
	// Covered is true when any host application (whatever its QoS or
	// cgroup base) covers the YARN hierarchy: its usage holds YARN's, so
	// YARN is not system usage and must not be added a second time.
	Covered bool `json:"covered"`
	// AsBE is true when the covering host application is counted as BE by
	// koordlet's BE CPU suppress: its QoS is BE and it is based in the
	// besteffort cgroup, or the YARN-aware suppress (YARNBECPUSuppress),
	// which counts a covering BE host application as BE whatever its base,
	// is on.
	AsBE bool `json:"asBE"`
	// HostApplication is the covering host application's name.
	HostApplication string `json:"hostApplication,omitempty"`
	// Reason explains AsBE=false.
	Reason string `json:"reason,omitempty"`
}

// CheckAccounting reports whether slo declares a host application whose
// cgroup is the YARN hierarchy dir or one of its ancestors, and whether
// koordlet counts it as BE.
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
			return Accounting{Covered: true, HostApplication: app.Name, Reason: "host application " + app.Name +
				" covers the YARN hierarchy but its QoS is " + string(app.QoS) + ", not BE"}
		}
		// Upstream's suppress counts a host application as BE only when it
		// is based in the besteffort cgroup (qosmanager
		// helpers.NonBEHostAppFilter); the YARN-aware suppress presents a
		// covering BE host application as BE whatever its base.
		if (app.CgroupPath == nil || app.CgroupPath.Base != slov1alpha1.CgroupBaseTypeKubeBesteffort) &&
			!features.Enabled(features.YARNBECPUSuppress) {
			return Accounting{Covered: true, HostApplication: app.Name, Reason: "host application " + app.Name +
				" covers the YARN hierarchy but koordlet's BE CPU suppress counts a host application as BE only with cgroupPath.base KubepodsBesteffort (or with the YARNBECPUSuppress gate on)"}
		}
		return Accounting{Covered: true, AsBE: true, HostApplication: app.Name}
	}
	return Accounting{Reason: "no BE host application in the NodeSLO covers the YARN hierarchy " + hierarchy +
		"; YARN usage is counted as system usage, which shrinks batch capacity and over-suppresses BE"}
}
