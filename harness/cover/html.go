package cover

import (
	"bufio"
	"bytes"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"
)

// WriteDir writes the report into dir: coverage.txt (the per-file and
// per-function table), index.html (the same, linked to the files) and one
// page per file under src/ (its source from the build directory, each
// instrumented line marked reached or not, each other line with code that
// ran marked too). With a patch (patch not nil), patch.txt and the
// patch's lines marked on the pages.
func (r *Report) WriteDir(dir string, patch *PatchReport) error {
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	var txt bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "coverage.txt"), txt.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	inPatch := map[FileLine]bool{}
	if patch != nil {
		var pt bytes.Buffer
		if err := patch.WriteText(&pt); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "patch.txt"), pt.Bytes(), 0o644); err != nil {
			return fmt.Errorf("cover: %w", err)
		}
		for _, l := range patch.Lines {
			inPatch[l.FileLine] = true
		}
	}
	var idx bytes.Buffer
	if err := indexPage.Execute(&idx, indexData{r, patch}); err != nil {
		return fmt.Errorf("cover: index.html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), idx.Bytes(), 0o644); err != nil {
		return fmt.Errorf("cover: %w", err)
	}
	hits := r.lineHits()
	for _, f := range r.Files {
		page, err := r.sourcePage(f, hits, inPatch)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, "src", pageName(f.File))
		if err := os.WriteFile(out, page, 0o644); err != nil {
			return fmt.Errorf("cover: %w", err)
		}
	}
	return nil
}

// pageName is the page of a source file under src/.
func pageName(file string) string { return strings.ReplaceAll(file, "/", "_") + ".html" }

// srcLine is one line of a source page.
type srcLine struct {
	N     int
	Text  string
	Class string // "hit", "miss", "ran" or ""
	Patch bool
}

func (r *Report) sourcePage(f FileStat, hits map[FileLine]bool, inPatch map[FileLine]bool) ([]byte, error) {
	src := filepath.Join(r.Image.BuildDir, f.File)
	data := struct {
		File    FileStat
		Source  string
		Missing string
		Lines   []srcLine
	}{File: f, Source: src}
	fh, err := os.Open(src)
	if err != nil {
		data.Missing = err.Error()
	} else {
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for n := 1; sc.Scan(); n++ {
			fl := FileLine{f.File, n}
			l := srcLine{N: n, Text: sc.Text(), Patch: inPatch[fl]}
			if hit, ok := hits[fl]; ok {
				l.Class = "miss"
				if hit {
					l.Class = "hit"
				}
			} else if ran, _ := r.Ran(fl); ran {
				l.Class = "ran"
			}
			data.Lines = append(data.Lines, l)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("cover: reading %s: %w", src, err)
		}
	}
	var b bytes.Buffer
	if err := sourceTmpl.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("cover: the page of %s: %w", f.File, err)
	}
	return b.Bytes(), nil
}

type indexData struct {
	*Report
	Patch *PatchReport
}

var funcs = template.FuncMap{"page": pageName}

const style = `<style>
body{font-family:sans-serif} table{border-collapse:collapse} td,th{padding:1px 8px;text-align:left}
pre{margin:0} .hit{background:#c8f0c8} .miss{background:#f4c0c0} .ran{background:#e8f8e8}
.patch td:first-child{border-left:4px solid #36c} .no{color:#a00}
</style>`

var indexPage = template.Must(template.New("index").Funcs(funcs).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>kernel coverage</title>` + style + `</head><body>
<h1>Kernel coverage</h1>
<p>{{.Summary}}<br>image {{.Image.Path}}; {{.PCs}} distinct program counters, {{.Outside}} outside these files.</p>
{{with .Patch}}<p>{{.Summary}}</p>{{end}}
<table><tr><th>file</th><th>lines</th><th>functions entered</th></tr>
{{range .Files}}<tr><td><a href="src/{{page .File}}">{{.File}}</a></td><td>{{.Lines}}</td><td>{{.Funcs}}</td></tr>
{{end}}</table>
<h2>Functions</h2>
<table><tr><th>file</th><th>function</th><th>lines</th></tr>
{{range .Funcs}}<tr><td>{{.File}}</td><td{{if not .Entered}} class="no"{{end}}><a href="src/{{page .File}}#L{{.Line}}">{{.Name}}</a></td><td>{{.Lines}}</td></tr>
{{end}}</table>
</body></html>
`))

var sourceTmpl = template.Must(template.New("source").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.File.File}}</title>` + style + `</head><body>
<h1>{{.File.File}}</h1>
<p>lines {{.File.Lines}}, functions entered {{.File.Funcs}}. <span class="hit">an instrumented line reached</span>
<span class="miss">an instrumented line never reached</span> <span class="ran">other code that ran</span>; a blue edge: a line of the patch.</p>
{{if .Missing}}<p>No source: {{.Missing}} (the build tree is gone or moved).</p>{{end}}
<table>{{range .Lines}}<tr id="L{{.N}}"{{if .Patch}} class="patch"{{end}}><td>{{.N}}</td><td{{if .Class}} class="{{.Class}}"{{end}}><pre>{{.Text}}</pre></td></tr>
{{end}}</table>
</body></html>
`))
