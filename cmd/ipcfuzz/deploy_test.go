package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kustomize renders a kustomization with kubectl, or skips saying why.
func kustomize(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH: cannot render " + dir)
	}
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	return string(out)
}

// document returns the rendered document of the given kind and name.
func document(t *testing.T, rendered, kind, name string) string {
	t.Helper()
	for _, doc := range strings.Split(rendered, "\n---\n") {
		if regexp.MustCompile(`(?m)^kind: `+kind+`$`).MatchString(doc) && regexp.MustCompile(`(?m)^  name: `+name+`$`).MatchString(doc) {
			return doc
		}
	}
	t.Fatalf("no %s %s in\n%s", kind, name, rendered)
	return ""
}

// field returns the value of the only line "key: value" of a document.
func field(t *testing.T, doc, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^[\s-]*`+regexp.QuoteMeta(key)+`: (.*)$`).FindAllStringSubmatch(doc, -1)
	require.Len(t, m, 1, "%s in\n%s", key, doc)
	return strings.Trim(m[0][1], `"'`)
}

// The Kubernetes shards are the table's: an Indexed Job with one
// completion per row, each running ci/nightly.sh on its index, with
// CAP_SYS_ADMIN, in a namespace that allows it, writing to a shared volume.
func TestKustomizeShards(t *testing.T) {
	rendered := kustomize(t, "../../deploy/k8s")
	ns := document(t, rendered, "Namespace", "ipcfuzz")
	require.Equal(t, "privileged", field(t, ns, "pod-security.kubernetes.io/enforce"))

	job := document(t, rendered, "Job", "ipcfuzz-shards")
	require.Equal(t, "Indexed", field(t, job, "completionMode"))
	n := strconv.Itoa(len(shardTable()))
	require.Equal(t, n, field(t, job, "completions"), "completions must be the shard table's row count")
	require.Equal(t, n, field(t, job, "parallelism"))
	require.Contains(t, job, "      - command:\n        - ci/nightly.sh\n        - $(JOB_COMPLETION_INDEX)\n        - $(BUDGET)\n        - /out\n")
	require.Contains(t, job, "batch.kubernetes.io/job-completion-index")
	require.Regexp(t, `capabilities:\n\s+add:\n\s+- SYS_ADMIN\n`, job)
	require.Equal(t, "ipcfuzz-out", field(t, job, "claimName"))
	require.Equal(t, "/out", field(t, job, "mountPath"))
	require.Regexp(t, `accessModes:\n\s+- ReadWriteMany\n`, document(t, rendered, "PersistentVolumeClaim", "ipcfuzz-out"))
}

// The merge Job merges the shards' outputs on the same volume, with the
// privileges its replays on the kernel need.
func TestKustomizeMerge(t *testing.T) {
	rendered := kustomize(t, "../../deploy/k8s/merge")
	job := document(t, rendered, "Job", "ipcfuzz-merge")
	require.Contains(t, job, "ipcfuzz corpus merge /out/shard-* --into /out/corpus --summary /out/summary.md")
	require.Regexp(t, `capabilities:\n\s+add:\n\s+- SYS_ADMIN\n`, job)
	require.Equal(t, "ipcfuzz-out", field(t, job, "claimName"))
}

// The image: a static ipcfuzz built in a first stage, and what the shards
// run with (the Go toolchain, the source, jq, ipcs).
func TestDockerfileShape(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "k8s", "Dockerfile"))
	require.NoError(t, err)
	text := string(data)
	require.Len(t, regexp.MustCompile(`(?m)^FROM `).FindAllString(text, -1), 2, "a build stage and a run stage")
	require.Regexp(t, `(?m)^RUN CGO_ENABLED=0 go build .*-o /ipcfuzz \./cmd/ipcfuzz$`, text)
	require.Contains(t, text, "COPY --from=build /ipcfuzz /usr/local/bin/ipcfuzz")
	require.Contains(t, text, "ENV IPCFUZZ=/usr/local/bin/ipcfuzz")
	for _, pkg := range []string{"jq", "util-linux", "gcc"} {
		require.Regexp(t, `apt-get install .*\b`+pkg+`\b`, text)
	}
	require.FileExists(t, filepath.Join("..", "..", "deploy", "k8s", "README.md"))
}
