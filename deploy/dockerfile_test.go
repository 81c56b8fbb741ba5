package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const koordinatorModule = "github.com/koordinator-sh/koordinator"

// pinnedKoordinator is the Koordinator version go.mod pins.
func pinnedKoordinator(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", koordinatorModule).Output()
	require.NoError(t, err, "go list -m %s", koordinatorModule)
	v := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(v, "v1."), "version %q", v)
	return v
}

// parseDockerfile parses the repository's Dockerfile with BuildKit's own
// parser, as docker build and buildah do.
func parseDockerfile(t *testing.T) ([]instructions.Stage, []instructions.ArgCommand) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	res, err := parser.Parse(f)
	require.NoError(t, err)
	assert.Empty(t, res.Warnings, "Dockerfile parser warnings")
	stages, metaArgs, err := instructions.Parse(res.AST, nil)
	require.NoError(t, err)
	return stages, metaArgs
}

func argDefault(args []instructions.ArgCommand, name string) (string, bool) {
	for _, a := range args {
		for _, kv := range a.Args {
			if kv.Key == name && kv.Value != nil {
				return *kv.Value, true
			}
		}
	}
	return "", false
}

// TestDockerfile checks the image's shape: the last stage is the stock
// koordlet image of the pinned Koordinator version (build args) with only
// /koordlet copied from the stage that builds ./cmd/koordlet with cgo and
// libpfm4, and no entrypoint, command or user of its own.
func TestDockerfile(t *testing.T) {
	stages, metaArgs := parseDockerfile(t)
	require.GreaterOrEqual(t, len(stages), 2, "multi-stage: a build stage and the final image")

	version, ok := argDefault(metaArgs, "KOORDINATOR_VERSION")
	require.True(t, ok, "ARG KOORDINATOR_VERSION with a default")
	assert.Equal(t, pinnedKoordinator(t), version, "the stock image's version is the one go.mod pins")
	image, ok := argDefault(metaArgs, "KOORDLET_IMAGE")
	require.True(t, ok, "ARG KOORDLET_IMAGE with a default")
	assert.True(t, strings.HasSuffix(image, "koordinator-sh/koordlet"), "KOORDLET_IMAGE %q names Koordinator's koordlet image", image)

	final := stages[len(stages)-1]
	assert.Equal(t, "${KOORDLET_IMAGE}:${KOORDINATOR_VERSION}", final.BaseName, "the final stage is the stock image, by build args")
	require.Len(t, final.Commands, 1, "the final stage only replaces the binary")
	cp, ok := final.Commands[0].(*instructions.CopyCommand)
	require.True(t, ok, "the final stage's one instruction is a COPY, got %T", final.Commands[0])
	assert.Equal(t, "/koordlet", cp.DestPath, "the chart runs /koordlet (command: [/koordlet])")
	require.NotEmpty(t, cp.From, "COPY --from the build stage")

	var builder *instructions.Stage
	for i := range stages[:len(stages)-1] {
		if stages[i].Name == cp.From {
			builder = &stages[i]
		}
	}
	require.NotNil(t, builder, "COPY --from=%s names a stage", cp.From)
	require.Len(t, cp.SourcePaths, 1)
	src := cp.SourcePaths[0]

	var build, pfm bool
	for _, c := range builder.Commands {
		run, ok := c.(*instructions.RunCommand)
		if !ok {
			continue
		}
		line := strings.Join(run.CmdLine, " ")
		if strings.Contains(line, "libpfm4-dev") {
			pfm = true
		}
		if strings.Contains(line, "go build") && strings.Contains(line, "-o "+src) && strings.Contains(line, "./cmd/koordlet") {
			build = true
		}
	}
	assert.True(t, pfm, "the build stage installs libpfm4-dev (koordlet's cgo perf code)")
	assert.True(t, build, "the build stage builds ./cmd/koordlet into %s", src)
	for _, c := range builder.Commands {
		if env, ok := c.(*instructions.EnvCommand); ok {
			for _, kv := range env.Env {
				if kv.Key == "CGO_ENABLED" {
					assert.Equal(t, "1", kv.Value, "cgo is needed")
				}
			}
		}
	}
}

// TestDockerignore keeps the build context to the sources: the cached
// kube-apiserver and etcd (build/) and local binaries (bin/) stay out.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	for _, want := range []string{"bin/", "build/", ".git"} {
		assert.Contains(t, lines, want)
	}
}
