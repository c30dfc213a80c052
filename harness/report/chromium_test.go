package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// chromium returns a headless-capable Chromium, or skips the test saying
// there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Skip("no Chromium (Debian's chromium, which .ci/run installs): the report cannot be opened in a browser here")
	return ""
}

// browse runs headless Chromium on the page with args, its profile and
// home in dir; its stdout.
func browse(t *testing.T, bin, dir, page string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_CACHE_HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium: %s", errb.String())
	return out.String()
}

// probe is a script added to a copy of the page: it asks the browser what
// it laid out and writes the answer into the page, which --dump-dom shows.
const probe = `<script>
(function () {
  var r = {};
  var sec = document.querySelector('section.finding');
  r.first = sec.getAttribute('data-first');
  var row = document.getElementById(sec.id + '-s' + r.first);
  r.rowClass = row ? row.className : '';
  r.rowBg = row ? getComputedStyle(row.cells[2]).backgroundColor : '';
  var plain = sec.querySelector('table.steps tbody tr:not(.diverge)');
  r.plainBg = plain ? getComputedStyle(plain.cells[2]).backgroundColor : '';
  var jump = sec.querySelector('a.jump');
  r.jump = jump ? jump.getAttribute('href') : '';
  r.lanes = sec.querySelectorAll('svg.lanes g.lane').length;
  var sleeps = sec.querySelectorAll('svg.lanes rect.sleep');
  r.sleeps = sleeps.length;
  r.drawn = 0;
  sleeps.forEach(function (s) { var b = s.getBoundingClientRect(); if (b.width > 0 && b.height > 0) r.drawn++; });
  r.laneWidth = sec.querySelector('svg.lanes').getBoundingClientRect().width;
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>`

type probed struct {
	First, RowClass, RowBg, PlainBg, Jump string
	Lanes, Sleeps, Drawn                  int
	LaneWidth                             float64
}

// The report of a msg race, opened in headless Chromium: the first
// diverging step is highlighted (its computed background is the highlight,
// not a plain row's) and linked, the task lanes are drawn with every
// sleep, and a screenshot of it is not blank. Two browser starts, about
// ten seconds: a long test.
func TestReportInChromium(t *testing.T) {
	testkit.Long(t)
	bin := chromium(t)
	f, err := report.Read(race)
	require.NoError(t, err)
	dir := t.TempDir()
	var b bytes.Buffer
	require.NoError(t, report.Write(&b, []report.Finding{f}, report.Options{}))
	page := filepath.Join(dir, "report.html")
	require.NoError(t, os.WriteFile(page, b.Bytes(), 0o644))

	withProbe := filepath.Join(dir, "probe.html")
	require.NoError(t, os.WriteFile(withProbe, []byte(strings.Replace(b.String(), "</body>", probe+"</body>", 1)), 0o644))
	dom := browse(t, bin, dir, withProbe, "--dump-dom")
	_, rest, ok := strings.Cut(dom, `<pre id="probe">`)
	require.True(t, ok, "the probe did not run: %.300s", dom)
	js, _, _ := strings.Cut(rest, "</pre>")
	var p probed
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(js)), &p), js)
	sleeps := 0
	for _, l := range f.Lanes {
		sleeps += len(l.Sleeps)
	}
	require.Equal(t, "diverge first", p.RowClass)
	require.Equal(t, "rgb(255, 143, 143)", p.RowBg, "the first diverging step is highlighted")
	require.NotEqual(t, p.PlainBg, p.RowBg)
	require.Equal(t, "#f0-s"+p.First, p.Jump, "the highlight is linked")
	require.Equal(t, len(f.Lanes), p.Lanes, "one lane per task")
	require.Equal(t, sleeps, p.Sleeps)
	require.Equal(t, sleeps, p.Drawn, "every sleep is drawn with an area")
	require.Positive(t, p.LaneWidth)

	shot := filepath.Join(dir, "shot.png")
	browse(t, bin, dir, page, "--screenshot="+shot, "--window-size=1280,1400")
	img := decodePNG(t, shot)
	white, highlight, laneA := 0, 0, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case r > 250 && g > 250 && bl > 250:
				white++
			case near(r, g, bl, 255, 143, 143):
				highlight++
			case near(r, g, bl, 0x3b, 0x6f, 0xb6):
				laneA++
			}
		}
	}
	total := bounds.Dx() * bounds.Dy()
	require.Less(t, white, total*98/100, "the screenshot is blank")
	require.Positive(t, highlight, "the screenshot shows the highlighted step")
	require.Positive(t, laneA, "the screenshot shows side A's sleeps")
	t.Logf("screenshot %dx%d: %d%% white, %d highlight pixels, %d lane pixels", bounds.Dx(), bounds.Dy(), 100*white/total, highlight, laneA)

	// Printed, the page is A4 (595 x 842 points, give or take a rounding).
	pdf := filepath.Join(dir, "report.pdf")
	browse(t, bin, dir, page, "--print-to-pdf="+pdf, "--no-pdf-header-footer")
	b2, err := os.ReadFile(pdf)
	require.NoError(t, err)
	require.Regexp(t, `/MediaBox \[\s*0 0 59[45]\.\d+ 841\.\d+\s*\]`, string(b2), "the page prints to A4")
}

func near(r, g, b, wr, wg, wb uint32) bool {
	d := func(x, y uint32) uint32 {
		if x > y {
			return x - y
		}
		return y - x
	}
	return d(r, wr) < 6 && d(g, wg) < 6 && d(b, wb) < 6
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	img, err := png.Decode(fh)
	require.NoError(t, err)
	return img
}
