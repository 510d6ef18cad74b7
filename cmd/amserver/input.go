package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/amserver/amserver/internal/jsonkeys"
)

// maxInputSize bounds what is read from a file; the server's own body limit
// is far lower (1 MiB), so anything bigger is a mistake.
const maxInputSize = 16 << 20

// readInput decodes a JSON or YAML file ("-" for stdin) into out, strictly:
// unknown fields are errors, so that a typo ("capacty") is caught here
// instead of silently meaning "use the default". Every failure is a usage
// error naming the file.
func (a *app) readInput(path, what string, out any) error {
	data, err := a.readAll(path)
	if err != nil {
		return usagef("cannot read %s file %s: %v", what, displayName(path), unwrapPathError(err))
	}
	if err := decodeStrict(path, data, out); err != nil {
		return usagef("invalid %s file %s: %v", what, displayName(path), err)
	}
	return nil
}

func (a *app) readAll(path string) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		if a.in == nil {
			return nil, errors.New("no standard input")
		}
		r = a.in
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInputSize {
		return nil, fmt.Errorf("larger than %d MiB", maxInputSize>>20)
	}
	return data, nil
}

func displayName(path string) string {
	if path == "-" {
		return "(stdin)"
	}
	return fmt.Sprintf("%q", path)
}

// unwrapPathError drops the path from an *os.PathError, which the message
// around it already names.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// decodeStrict decodes JSON directly (keeping its line numbers in errors)
// and anything else as YAML converted to JSON, then decodes that with
// unknown fields (and known ones in another case) disallowed. A .json file is never read as YAML, so a
// broken one gets a JSON error rather than a puzzling YAML one.
func decodeStrict(path string, data []byte, out any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return errors.New("it is empty")
	}
	js := trimmed
	isJSON := strings.HasSuffix(strings.ToLower(path), ".json") || json.Valid(trimmed)
	if !isJSON {
		if multipleDocuments(data) {
			return errors.New("it holds more than one YAML document")
		}
		var err error
		// Strict conversion also rejects a key given twice.
		if js, err = yaml.YAMLToJSONStrict(data); err != nil {
			return err
		}
	}
	// JSON null (or an empty YAML document) decodes into nothing and would
	// send every field's zero value.
	if string(bytes.TrimSpace(js)) == "null" {
		return errors.New("it holds no document (null)")
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return explainJSONError(err, js, isJSON)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the first JSON value")
	}
	// The decoder matches keys to fields ignoring case; the server does not.
	return jsonkeys.Check(js, reflect.TypeOf(out))
}

// multipleDocuments reports a "---" separator after content: the YAML
// converter would silently use only the first document.
func multipleDocuments(data []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxInputSize+1)
	seen := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		isMarker := line == "---" || strings.HasPrefix(line, "--- ")
		if isMarker && seen {
			return true
		}
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") && !isMarker {
			seen = true
		}
	}
	return false
}

// explainJSONError rewrites encoding/json's Go-flavoured messages in terms
// of the file: field paths, JSON types and, for JSON input, line numbers.
func explainJSONError(err error, data []byte, withLines bool) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	at := func(off int64) string {
		if !withLines {
			return ""
		}
		line := 1 + bytes.Count(data[:min(max(off, 0), int64(len(data)))], []byte("\n"))
		return fmt.Sprintf(" (line %d)", line)
	}
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s%s", syn.Error(), at(syn.Offset))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the document"
		} else {
			field = fmt.Sprintf("field %q", field)
		}
		return fmt.Errorf("%s must be %s, not %s%s", field, jsonKind(typ.Type), typ.Value, at(typ.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("it ends in the middle of a value")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another type"
}
