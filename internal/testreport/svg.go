package testreport

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// SVGPath is a <path> of the chart: its stroke color and the x of its
// vertices (in the SVG's coordinates).
type SVGPath struct {
	Stroke string
	Xs     []float64
}

// ParseSVG parses the chart as XML and returns its stroked paths and texts.
func ParseSVG(t *testing.T, data []byte) (paths []SVGPath, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	strokeRE := regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`)
	vertexRE := regexp.MustCompile(`[ML]([-0-9.e+]+),([-0-9.e+]+)`)
	sawSVG := false
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			switch el.Name.Local {
			case "svg":
				sawSVG = true
			case "text":
				inText = true
				texts = append(texts, "")
			case "path":
				var p SVGPath
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "style":
						if m := strokeRE.FindStringSubmatch(a.Value); m != nil {
							p.Stroke = strings.ToUpper(m[1])
						}
					case "d":
						for _, m := range vertexRE.FindAllStringSubmatch(a.Value, -1) {
							x, err := strconv.ParseFloat(m[1], 64)
							if err != nil {
								t.Fatalf("path vertex %q: %v", m[0], err)
							}
							p.Xs = append(p.Xs, x)
						}
					}
				}
				if p.Stroke != "" {
					paths = append(paths, p)
				}
			}
		case xml.CharData:
			if inText {
				texts[len(texts)-1] += string(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" {
				inText = false
			}
		}
	}
	if !sawSVG {
		t.Fatal("no <svg> element")
	}
	return paths, texts
}

// Hex is c as the SVG spells a stroke color, "#D62728".
func Hex(c color.RGBA) string { return fmt.Sprintf("#%02X%02X%02X", c.R, c.G, c.B) }

// Longest is the path of that stroke with the most vertices (the series
// line, not its legend sample or the death cross).
func Longest(paths []SVGPath, stroke string) SVGPath {
	var best SVGPath
	for _, p := range paths {
		if p.Stroke == stroke && len(p.Xs) > len(best.Xs) {
			best = p
		}
	}
	return best
}

// MaxOf is the largest of xs.
func MaxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
