package cachemutation

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// shallowCopy returns a new object whose top-level struct is a copy of
// *obj: it shares every map, slice and pointer with obj (and so with the
// cache when obj was filled from it), but its struct is the detector's own,
// which no request writes. obj must be a non-nil pointer to a struct.
func shallowCopy(obj runtime.Object) (runtime.Object, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	return shallowCopyValue(v.Elem())
}

// shallowCopyValue is shallowCopy of a struct value (a list item).
func shallowCopyValue(item reflect.Value) (runtime.Object, bool) {
	if item.Kind() != reflect.Struct {
		return nil, false
	}
	p := reflect.New(item.Type())
	p.Elem().Set(item)
	o, ok := p.Interface().(runtime.Object)
	return o, ok
}

// maxShareDepth bounds sharesMemory's walk; API objects reach their maps and
// slices within a few levels (object, metadata, field).
const maxShareDepth = 8

// sharesMemory reports whether a and b (values of the same type) share a
// map, a non-empty slice's backing array or a pointer target, looking at
// exported fields only: unexported fields (e.g. time.Time's location) point
// to process-wide values that every decoded object shares.
func sharesMemory(a, b reflect.Value, depth int) bool {
	if depth > maxShareDepth || !a.IsValid() || !b.IsValid() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.Type().Elem().Kind() == reflect.Interface {
			// JSON-like content (unstructured): nested maps may be shared.
			iter := a.MapRange()
			for n := 0; iter.Next() && n < 64; n++ {
				if sharesMemory(iter.Value(), b.MapIndex(iter.Key()), depth+1) {
					return true
				}
			}
		}
		return false
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return false
		}
		return a.Pointer() == b.Pointer()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return false
		}
		if a.Pointer() == b.Pointer() {
			return true
		}
		return sharesMemory(a.Elem(), b.Elem(), depth+1)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return false
		}
		return sharesMemory(a.Elem(), b.Elem(), depth+1)
	case reflect.Struct:
		t := a.Type()
		for i := 0; i < a.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			if sharesMemory(a.Field(i), b.Field(i), depth+1) {
				return true
			}
		}
	}
	return false
}

var (
	rwMutexType    = reflect.TypeOf(sync.RWMutex{})
	cachingObjWarn sync.Once
)

// cachingObjectPkg and cachingObjectName identify the cacher's wrapper of
// watch event objects.
const (
	cachingObjectPkg  = "k8s.io/apiserver/pkg/storage/cacher"
	cachingObjectName = "cachingObject"
)

// unwrapCachingObject returns the object a k8s.io/apiserver cacher
// cachingObject wraps, read under the cachingObject's lock. shared is false
// when obj is not a cachingObject, or the cachingObject already replaced its
// object with a private deep copy (its setters copy on write).
//
// The cachingObject type is unexported; this reads its fields lock,
// deepCopied and object by reflection and checks their types first, so a
// different layout disables watch tracking (logged once) instead of
// misreading memory.
func unwrapCachingObject(obj runtime.Object) (runtime.Object, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	e := v.Elem()
	t := e.Type()
	if t.Kind() != reflect.Struct || t.Name() != cachingObjectName || t.PkgPath() != cachingObjectPkg {
		return nil, false
	}
	lockF, deepF, objF := e.FieldByName("lock"), e.FieldByName("deepCopied"), e.FieldByName("object")
	if !lockF.IsValid() || lockF.Type() != rwMutexType ||
		!deepF.IsValid() || deepF.Kind() != reflect.Bool ||
		!objF.IsValid() || objF.Kind() != reflect.Interface {
		cachingObjWarn.Do(func() {
			logger.Info("Watch events are not tracked: the cacher's cachingObject has an unknown layout", "type", t.String())
		})
		return nil, false
	}
	lock := (*sync.RWMutex)(unsafe.Pointer(lockF.UnsafeAddr()))
	lock.RLock()
	deepCopied := deepF.Bool()
	inner := reflect.NewAt(objF.Type(), unsafe.Pointer(objF.UnsafeAddr())).Elem().Interface()
	lock.RUnlock()
	if deepCopied || inner == nil {
		return nil, false
	}
	ro, ok := inner.(runtime.Object)
	return ro, ok
}

// exportAll lets go-cmp compare unexported fields (time.Time, Quantity).
var exportAll = cmp.Exporter(func(reflect.Type) bool { return true })

// maxPaths bounds Finding.Paths.
const maxPaths = 32

// changes returns the changed field paths and go-cmp's diff of before and
// after.
func changes(before, after runtime.Object) ([]string, string) {
	var r pathReporter
	cmp.Equal(before, after, exportAll, cmp.Reporter(&r))
	diff := cmp.Diff(before, after, exportAll)
	return r.paths, diff
}

// pathReporter collects the JSON paths of go-cmp's unequal leaves.
type pathReporter struct {
	steps cmp.Path
	paths []string
	seen  map[string]bool
}

func (r *pathReporter) PushStep(ps cmp.PathStep) { r.steps = append(r.steps, ps) }
func (r *pathReporter) PopStep()                 { r.steps = r.steps[:len(r.steps)-1] }

func (r *pathReporter) Report(res cmp.Result) {
	if res.Equal() || len(r.paths) >= maxPaths {
		return
	}
	p := jsonPath(r.steps)
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if !r.seen[p] {
		r.seen[p] = true
		r.paths = append(r.paths, p)
	}
}

var unstructuredType = reflect.TypeOf(unstructured.Unstructured{})

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jsonPath renders a go-cmp path in JSON field names:
// metadata.annotations["kcp.io/original-api-version"], rules[0].verbs[1],
// data.key (keys of JSON objects that are identifiers are written with a dot).
func jsonPath(steps cmp.Path) string {
	var b strings.Builder
	dot := func(name string) {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
	}
	for i, s := range steps {
		switch s := s.(type) {
		case cmp.StructField:
			if i == 0 {
				continue
			}
			parent := steps[i-1].Type()
			for parent.Kind() == reflect.Pointer {
				parent = parent.Elem()
			}
			if parent.Kind() != reflect.Struct || s.Index() >= parent.NumField() {
				dot(s.Name())
				continue
			}
			if parent == unstructuredType && s.Name() == "Object" {
				continue // the content itself
			}
			if name, inline := jsonName(parent.Field(s.Index())); !inline {
				dot(name)
			}
		case cmp.MapIndex:
			k := s.Key()
			if k.Kind() == reflect.String {
				key := k.String()
				if s.Type().Kind() == reflect.Interface && identifier.MatchString(key) {
					dot(key)
				} else {
					b.WriteString("[" + strconv.Quote(key) + "]")
				}
			} else {
				fmt.Fprintf(&b, "[%v]", k)
			}
		case cmp.SliceIndex:
			x, y := s.SplitKeys()
			if y < 0 {
				y = x
			}
			fmt.Fprintf(&b, "[%d]", y)
		}
	}
	if b.Len() == 0 {
		return "."
	}
	return b.String()
}

// jsonName is a struct field's JSON name; inline is true for embedded
// fields without a name (TypeMeta). Internal API types carry no JSON tags:
// their embedded ObjectMeta and ListMeta are "metadata" and other fields
// get the lower-camel-case name their versioned twins use (Rules: rules,
// APIGroups: apiGroups).
func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" {
		return f.Name, false
	}
	if name != "" {
		return name, false
	}
	if f.Anonymous || strings.Contains(opts, "inline") {
		switch f.Type {
		case objectMetaType, listMetaType:
			return "metadata", false
		}
		return "", true
	}
	return lowerCamel(f.Name), false
}

var (
	objectMetaType = reflect.TypeOf(metav1.ObjectMeta{})
	listMetaType   = reflect.TypeOf(metav1.ListMeta{})
)

// lowerCamel lowers a Go name's leading capitals, keeping the last one of
// a run that a lower-case letter follows: APIGroups -> apiGroups, UID -> uid.
func lowerCamel(s string) string {
	r := []rune(s)
	for i := 0; i < len(r) && unicode.IsUpper(r[i]); i++ {
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}
