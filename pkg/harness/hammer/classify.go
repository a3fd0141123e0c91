package hammer

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// StatusError is a non-2xx answer from the server.
type StatusError struct {
	Method string
	Path   string
	Code   int
	Body   string // the start of the body, for the report
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d %s: %s", e.Method, e.Path, e.Code, http.StatusText(e.Code), e.Body)
}

// ProtocolError is a 2xx answer the hammer could not use, e.g. a server that
// ignored the partial-metadata Accept header.
type ProtocolError struct {
	Path string
	Msg  string
}

func (e *ProtocolError) Error() string { return e.Path + ": " + e.Msg }

// Classify says how a request ended. Errors that are neither a status nor a
// protocol error mean no HTTP answer arrived: transport.
func Classify(err error) ErrorClass {
	if err == nil {
		return ClassOK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return classOfCode(se.Code)
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return ClassProtocol
	}
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		if code := int(as.Status().Code); code != 0 {
			return classOfCode(code)
		}
		return ClassProtocol
	}
	return ClassTransport
}

func classOfCode(code int) ErrorClass {
	switch {
	case code >= 200 && code < 300:
		return ClassOK
	case code == http.StatusConflict:
		return ClassConflict
	case code >= 500:
		return Class5xx
	case code >= 400:
		return Class4xx
	}
	return ClassProtocol
}

// isNotFound reports a 404 answer.
func isNotFound(err error) bool { return statusCode(err) == http.StatusNotFound }

// isAlreadyExists reports a 409 answer to a create.
func isAlreadyExists(err error) bool { return statusCode(err) == http.StatusConflict }

func statusCode(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}
