package hammer

import (
	"fmt"

	"github.com/kcp-carry/kcp-carry/pkg/harness/requestshape"
)

// listerShapeSpelling is what a lister's shape may be.
const listerShapeSpelling = `<v1|v1beta1|kcp|json>:<""|0>[:paged]`

// CheckListerShape says why s cannot be a lister's: a lister sends
// partial-metadata LISTs, or full-object JSON LISTs (json: a control that a
// stock kcp survives), without a selector, where --scope says.
func CheckListerShape(s requestshape.Shape) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Verb != requestshape.List || !(s.Accept.Partial() || s.Accept == requestshape.JSON) || s.Scope != requestshape.Wildcard || s.Selector != requestshape.Plain {
		return fmt.Errorf("request shape %s is not a lister's: want %s (a partial-metadata LIST; --scope says where it goes)", s.Name(), listerShapeSpelling)
	}
	return nil
}

// ParseListerShape parses one lister shape, e.g. "v1beta1:0:paged", "kcp:".
func ParseListerShape(name string) (requestshape.Shape, error) {
	s, err := requestshape.Parse(name)
	if err != nil {
		return requestshape.Shape{}, err
	}
	return s, CheckListerShape(s)
}

// ParseListerShapes parses comma-separated lister shapes.
func ParseListerShapes(names string) ([]requestshape.Shape, error) {
	shapes, err := requestshape.ParseList(names)
	if err != nil {
		return nil, err
	}
	for _, s := range shapes {
		if err := CheckListerShape(s); err != nil {
			return nil, err
		}
	}
	return shapes, nil
}

// ListerShapes returns the shape of each of n listers: given, cycled, or
// the catalogue's default mix (requestshape.HammerListers), cycled.
func ListerShapes(given []requestshape.Shape, n int) []requestshape.Shape {
	if len(given) == 0 {
		given = requestshape.HammerListers
	}
	out := make([]requestshape.Shape, n)
	for i := range out {
		out[i] = given[i%len(given)]
	}
	return out
}

// listerShape is one lister's request shape.
type listerShape struct{ requestshape.Shape }

// opName is the lister's operation in reports, e.g. `list v1beta1 rv="" paged`,
// `list kcp-client rv=0`.
func (s listerShape) opName() string {
	op := "list " + s.Accept.MetaVersion
	switch {
	case !s.Accept.Partial():
		op = "list " + s.Accept.Name
	case s.KCPMetadataClient:
		op = "list kcp-client"
	}
	if s.ResourceVersion == "" {
		op += ` rv=""`
	} else {
		op += " rv=" + s.ResourceVersion
	}
	if s.Paged {
		op += " paged"
	}
	return op
}
