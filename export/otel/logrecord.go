package otel

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"

	"github.com/llmtap/llmtap/telemetry/record"
)

// The log record of a request carries every field of the records file (telemetry/record.Record
// as JSON) as an attribute. A field the GenAI or general semantic conventions name keeps that
// name (LogAttributeNames); every other field is "llmtap." and its JSON name, and a nested
// object's fields are flattened with dots ("llmtap.gpu.energy_j", "llmtap.time_split.proxy_ms").
// Values keep the file's units (milliseconds, tokens, bytes, watts, joules) and Go types: a
// string is a string, an integer an int, a float a double, a list of floats a double array.
// What the file writes as null, an empty string, or leaves out, is left out.

// LogAttributeNames maps the records file's field names to the semantic-convention attribute
// names they are exported under; a field not in the map is exported as "llmtap." + its name.
var LogAttributeNames = map[string]string{
	"model":              attrResponseModel,
	"session_id":         "gen_ai.conversation.id",
	"stream":             attrRequestStream,
	"status":             attrHTTPStatus,
	"error":              attrErrorType,
	"finish_reason":      attrFinishReasons, // a string array of one, as the convention has it
	"input_tokens":       attrUsageInput,
	"output_tokens":      attrUsageOutput,
	"reasoning_tokens":   attrUsageReasoning,
	"cached_tokens":      attrUsageCacheRead,
	"cache_write_tokens": attrUsageCacheWrite,
	"path":               "url.path",
}

// Attributes derived from the record rather than copied from one of its fields.
const (
	// LogAttrOperation is gen_ai.operation.name (Operation of the record's API).
	LogAttrOperation = attrOperation
	// LogAttrProvider is gen_ai.provider.name (Provider of the record's API).
	LogAttrProvider = attrProvider
	// LogAttrRequestModel is gen_ai.request.model, the model the request body named, when it
	// named one (the record's model is the response's when the response names one).
	LogAttrRequestModel = attrRequestModel
)

// fieldKind is how one field becomes an attribute.
type fieldKind uint8

const (
	kindString fieldKind = iota
	kindStringList
	kindBool
	kindInt
	kindFloat
	kindFloatPtr
	kindFloatList
	kindTime
	kindStruct // a pointer to a struct, flattened; nil is left out
	kindJSON   // anything else: its JSON text, so a field added later is never lost
)

// logField is one exported field of a struct and the attribute it becomes.
type logField struct {
	index     int
	key       string
	kind      fieldKind
	omitEmpty bool
	sub       []logField // kindStruct
}

// recordFields is the plan for record.Record, built once from its JSON tags.
var recordFields = sync.OnceValue(func() []logField {
	return planFields(reflect.TypeFor[record.Record](), "", true)
})

var (
	typeTime      = reflect.TypeFor[time.Time]()
	typeFloatPtr  = reflect.TypeFor[*float64]()
	typeFloatList = reflect.TypeFor[[]float64]()
)

// planFields lists the fields of struct type t that encoding/json writes, with their
// attribute keys: top-level fields are renamed by LogAttributeNames, the rest prefixed.
func planFields(t reflect.Type, prefix string, top bool) []logField {
	var out []logField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if !sf.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = sf.Name
		}
		f := logField{index: i, key: "llmtap." + prefix + name, omitEmpty: strings.Contains(opts, "omitempty")}
		if top {
			if k, ok := LogAttributeNames[name]; ok {
				f.key = k
			}
		}
		switch ft := sf.Type; {
		case ft == typeTime:
			f.kind = kindTime
		case ft == typeFloatPtr:
			f.kind = kindFloatPtr
		case ft == typeFloatList:
			f.kind = kindFloatList
		case ft.Kind() == reflect.String && top && name == "finish_reason":
			f.kind = kindStringList
		case ft.Kind() == reflect.String:
			f.kind = kindString
		case ft.Kind() == reflect.Bool:
			f.kind = kindBool
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64:
			f.kind = kindInt
		case ft.Kind() == reflect.Float64 || ft.Kind() == reflect.Float32:
			f.kind = kindFloat
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			f.kind = kindStruct
			f.sub = planFields(ft.Elem(), prefix+name+".", false)
		default:
			f.kind = kindJSON
		}
		out = append(out, f)
	}
	return out
}

// appendFields appends the attributes of struct value v by plan.
func appendFields(attrs []attribute.KeyValue, v reflect.Value, plan []logField) []attribute.KeyValue {
	for i := range plan {
		f := &plan[i]
		fv := v.Field(f.index)
		switch f.kind {
		case kindString:
			if s := fv.String(); s != "" {
				attrs = append(attrs, attribute.String(f.key, s))
			}
		case kindStringList:
			if s := fv.String(); s != "" {
				attrs = append(attrs, attribute.StringSlice(f.key, []string{s}))
			}
		case kindBool:
			if b := fv.Bool(); b || !f.omitEmpty {
				attrs = append(attrs, attribute.Bool(f.key, b))
			}
		case kindInt:
			if n := fv.Int(); n != 0 || !f.omitEmpty {
				attrs = append(attrs, attribute.Int64(f.key, n))
			}
		case kindFloat:
			if x := fv.Float(); x != 0 || !f.omitEmpty {
				attrs = append(attrs, attribute.Float64(f.key, x))
			}
		case kindFloatPtr:
			if !fv.IsNil() {
				attrs = append(attrs, attribute.Float64(f.key, fv.Elem().Float()))
			}
		case kindFloatList:
			if !fv.IsNil() && (fv.Len() > 0 || !f.omitEmpty) {
				attrs = append(attrs, attribute.Float64Slice(f.key, fv.Interface().([]float64)))
			}
		case kindTime:
			if t := fv.Interface().(time.Time); !t.IsZero() || !f.omitEmpty {
				attrs = append(attrs, attribute.String(f.key, t.Format(time.RFC3339Nano)))
			}
		case kindStruct:
			if !fv.IsNil() {
				attrs = appendFields(attrs, fv.Elem(), f.sub)
			}
		case kindJSON:
			if f.omitEmpty && fv.IsZero() {
				continue
			}
			if b, err := json.Marshal(fv.Interface()); err == nil && string(b) != "null" {
				attrs = append(attrs, attribute.String(f.key, string(b)))
			}
		}
	}
	return attrs
}

// AppendLogAttributes appends the attributes of r's log record: every field of the records
// file (see LogAttributeNames) and the derived gen_ai.operation.name, gen_ai.provider.name and
// gen_ai.request.model.
func AppendLogAttributes(attrs []attribute.KeyValue, r *record.Record) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(LogAttrOperation, Operation(r.API)),
		attribute.String(LogAttrProvider, Provider(r.API)))
	if m := r.RequestModel; m != "" {
		attrs = append(attrs, attribute.String(LogAttrRequestModel, m))
	}
	return appendFields(attrs, reflect.ValueOf(r).Elem(), recordFields())
}

// FillLogRecord sets lr to the log record of r: event name EventRequest, timestamp the
// request's arrival (the record's start), severity INFO for a request that succeeded and WARN
// for one that failed, and the attributes of AppendLogAttributes. It has no body.
func FillLogRecord(lr *log.Record, r *record.Record) {
	lr.SetEventName(EventRequest)
	lr.SetTimestamp(r.Start)
	if r.OK() {
		lr.SetSeverity(log.SeverityInfo)
		lr.SetSeverityText("INFO")
	} else {
		lr.SetSeverity(log.SeverityWarn)
		lr.SetSeverityText("WARN")
	}
	var buf [96]attribute.KeyValue // a full record has 83
	lr.AddAttributes(AppendLogAttributes(buf[:0], r)...)
}
