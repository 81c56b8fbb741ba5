// Package deploy holds no code: its tests check the deployment files beside
// them (the image's Dockerfile and build script, the DaemonSet overlay for
// Koordinator's chart, the YARN-side configuration) against the code they
// configure.
package deploy
