package cachemutation

import (
	"context"
	"net/http"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

type httpRequestKey struct{}

type httpRequest struct {
	method, path, query, accept string
}

// WithRequest records the request's method, path, query and Accept header in
// its context, so findings can name the request as the client sent it. Put it
// outermost in the handler chain: filters such as kcp's cluster scope rewrite
// the path. With a nil Detector it returns h unchanged.
func (d *Detector) WithRequest(h http.Handler) http.Handler {
	if d == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info := &httpRequest{
			method: req.Method,
			path:   req.URL.Path,
			query:  req.URL.RawQuery,
			accept: req.Header.Get("Accept"),
		}
		h.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), httpRequestKey{}, info)))
	})
}

// requestFrom describes the request in ctx; op (get, list, watch) is the
// verb when ctx carries no request info.
func requestFrom(ctx context.Context, op string) Request {
	r := Request{Verb: op}
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info != nil {
		if info.Verb != "" {
			r.Verb = info.Verb
		}
		r.Path = info.Path
	}
	if h, ok := ctx.Value(httpRequestKey{}).(*httpRequest); ok {
		r.Method, r.Path, r.Query, r.Accept = h.method, h.path, h.query, h.accept
	}
	return r
}
