package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// decode reads the JSON body of c into v the way the real API does: unknown
// fields are UnknownParameter, wrong types InvalidParameter.FormatError and
// anything that is not JSON InvalidParameter. An empty body means {}.
func decode[T any](c *call, v *T) *apiError {
	body := bytes.TrimSpace(c.body)
	if len(body) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return errorf(codeInvalidParameter, "The request body must hold exactly one JSON object.")
	}
	if _, err := dec.Token(); err == nil {
		return errorf(codeInvalidParameter, "The request body must hold exactly one JSON object.")
	}
	return nil
}

func decodeError(err error) *apiError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			return errorf(codeFormatError, "The request body must be a JSON object, got %s.", typeErr.Value)
		}
		return errorf(codeFormatError, "The parameter `%s` has a wrong type: got %s, want %s.", field, typeErr.Value, typeErr.Type)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errorf(codeUnknownParameter, "The parameter `%s` is not recognized.", strings.Trim(name, `"`))
	}
	return errorf(codeInvalidParameter, "The request body is not valid JSON: %v.", err)
}

// Pointer helpers: the SDK models use pointers for every field.

func ptr[T any](v T) *T { return &v }

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func i64(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func boolean(p *bool) bool { return p != nil && *p }

func strPtrs(ss []string) []*string {
	if ss == nil {
		return nil
	}
	out := make([]*string, len(ss))
	for i := range ss {
		out[i] = &ss[i]
	}
	return out
}

// strs dereferences a []*string, treating nil members as "".
func strs(ps []*string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = str(p)
	}
	return out
}

// nameOK checks the documented 1–80 character rule for names.
func nameOK(s string) bool {
	n := utf8.RuneCountInString(s)
	return n >= 1 && n <= 80 && utf8.ValidString(s)
}

// beijing converts t to China Standard Time, which is how the real API
// prints its timestamps.
func beijing(t time.Time) time.Time {
	return t.UTC().Add(8 * time.Hour)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return beijing(t).Format(time.DateTime)
}
