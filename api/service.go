package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// Options wire a Service to the host it reads and controls. Only Host is required.
type Options struct {
	// Host returns the host to serve, called for each request so that a host can change
	// while the service runs (the Caddy module serves the process running at the time). A
	// nil Host, or one that returns nil, serves nothing: the read RPCs answer Unavailable with
	// NoTap.
	Host func() Host
	// NoTap is the message of the Unavailable error the read RPCs answer while the host runs
	// no measurement engine (no loaded config uses the llmtap handler).
	NoTap string
	// NoShadow says why there is no shadow load control here, for the shadow RPCs'
	// Unimplemented error while the host has none.
	NoShadow string
	// NoRecording says why there is no recording control here, for the recording RPCs'
	// Unimplemented error while the host has none.
	NoRecording string
	// ReadOnly refuses every control RPC (PermissionDenied), for endpoints outside the admin
	// listener.
	ReadOnly bool
	// MaxStreams bounds the StreamTimeline streams open at once on this service; one more is
	// refused with ResourceExhausted (each stream holds a goroutine, a connection and its
	// buffers until the client leaves). 0 means DefaultMaxStreams.
	MaxStreams int
	// StreamRefused is called for each stream refused for MaxStreams (nil: none), for a
	// host's metrics.
	StreamRefused func()
}

// DefaultMaxStreams is the default of Options.MaxStreams: far more than the terminals and
// dashboards that watch one instance (llmtap top opens one stream each).
const DefaultMaxStreams = 64

// Service implements llmtap.v1.TapService.
type Service struct {
	opts  Options
	stats Timeline

	streams atomic.Int64  // StreamTimeline streams open now
	refused atomic.Uint64 // streams refused for MaxStreams
}

// New returns a service over opts.
func New(opts Options) *Service {
	if opts.NoTap == "" {
		opts.NoTap = "no loaded config uses the llmtap handler"
	}
	if opts.NoShadow == "" {
		opts.NoShadow = "shadow load is not available here"
	}
	if opts.NoRecording == "" {
		opts.NoRecording = "recording cannot be controlled here"
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	s := &Service{opts: opts}
	s.stats = &StatsTimeline{Tap: func() *tap.Tap { return s.host().Tap() }}
	return s
}

// MaxRequestBytes bounds a request message: every request of the service is a few fields, so
// anything larger is refused (ResourceExhausted) before it is decoded.
const MaxRequestBytes = 64 << 10

// Handler returns the service's path prefix ("/llmtap.v1.TapService/") and its HTTP handler,
// which speaks the Connect, gRPC and gRPC-Web protocols. Requests are bounded by
// MaxRequestBytes; opts come after that limit and may change it.
func (s *Service) Handler(opts ...connect.HandlerOption) (string, http.Handler) {
	return llmtapv1connect.NewTapServiceHandler(s, append([]connect.HandlerOption{connect.WithReadMaxBytes(MaxRequestBytes)}, opts...)...)
}

// Streams returns the StreamTimeline streams open now and those refused so far for
// Options.MaxStreams.
func (s *Service) Streams() (open int64, refused uint64) {
	return s.streams.Load(), s.refused.Load()
}

// StreamProcedure is the path of the streaming RPC, which hosts may need to treat apart (no
// read deadline).
const StreamProcedure = llmtapv1connect.TapServiceStreamTimelineProcedure

// host returns the host to serve now (NoHost when there is none).
func (s *Service) host() Host {
	if s.opts.Host != nil {
		if h := s.opts.Host(); h != nil {
			return h
		}
	}
	return NoHost{}
}

func (s *Service) tap() (*tap.Tap, error) {
	t := s.host().Tap()
	if t == nil {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New(s.opts.NoTap))
	}
	return t, nil
}

// Summary returns the statistics per (model, class, status class).
func (s *Service) Summary(ctx context.Context, req *connect.Request[llmtapv1.SummaryRequest]) (*connect.Response[llmtapv1.SummaryResponse], error) {
	keep := func(string) bool { return true }
	switch w := req.Msg.GetWindow(); w {
	case "":
	case stats.WindowCumulative:
		keep = func(g string) bool { return g == stats.WindowCumulative }
	case "window":
		keep = func(g string) bool { return g != stats.WindowCumulative }
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("window %q: want \"\" (all), \"cumulative\" or \"window\"", w))
	}
	t, err := s.tap()
	if err != nil {
		return nil, err
	}
	sum := t.Stats().Summary()
	res := &llmtapv1.SummaryResponse{
		Time: timeProto(sum.Time), Window: sum.Window, InFlight: t.InFlight(),
		RecordsDropped: t.Dropped(), FoldedRecords: sum.Folded,
	}
	res.RecorderDropped = s.host().RecorderDropped()
	for i := range sum.Groups {
		if keep(sum.Groups[i].Window) {
			res.Groups = append(res.Groups, groupProto(&sum.Groups[i]))
		}
	}
	for i := range sum.Usage {
		res.Usage = append(res.Usage, usageProto(&sum.Usage[i]))
	}
	for _, o := range sum.SLOs {
		res.GoodputObjectives = append(res.GoodputObjectives, &llmtapv1.GoodputObjective{Metric: o.Metric, Threshold: o.Threshold})
	}
	return connect.NewResponse(res), nil
}

// maxRecords bounds RecentRecords' limit.
const maxRecords = 100_000

// RecentRecords returns the newest records, newest last.
func (s *Service) RecentRecords(ctx context.Context, req *connect.Request[llmtapv1.RecentRecordsRequest]) (*connect.Response[llmtapv1.RecentRecordsResponse], error) {
	limit := int(req.Msg.GetLimit())
	switch {
	case limit == 0:
		limit = 100
	case limit < 0 || limit > maxRecords:
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("limit %d: want 1 to %d (0 means 100)", limit, maxRecords))
	}
	t, err := s.tap()
	if err != nil {
		return nil, err
	}
	class, model := req.Msg.GetClass(), req.Msg.GetModel()
	n := limit
	if class != "" || model != "" {
		n = 0 // filter all, then keep the newest
	}
	res := &llmtapv1.RecentRecordsResponse{}
	for _, r := range t.Recent().Last(n) {
		if (class == "" || r.Class == class) && (model == "" || r.Model == model) {
			res.Records = append(res.Records, recordProto(r))
		}
	}
	if len(res.Records) > limit {
		res.Records = res.Records[len(res.Records)-limit:]
	}
	return connect.NewResponse(res), nil
}

// maxInterval bounds StreamTimeline's interval.
const maxInterval = time.Hour

// maxProvisional bounds the windows a stream waits on to become final (oldest forgotten first).
const maxProvisional = 1000

// StreamTimeline sends timeline windows until the client goes away: each window once when it
// closes, and a window that was not final then once more when it becomes final (the same Seq),
// so that a client that keeps the latest version of each window adds up final figures.
//
// At most Options.MaxStreams streams are open at once; one more is refused with
// ResourceExhausted before anything is sent, and counted (StreamsRefused).
func (s *Service) StreamTimeline(ctx context.Context, req *connect.Request[llmtapv1.StreamTimelineRequest], stream *connect.ServerStream[llmtapv1.StreamTimelineResponse]) error {
	if n := s.streams.Add(1); n > int64(s.opts.MaxStreams) {
		s.streams.Add(-1)
		s.refused.Add(1)
		if s.opts.StreamRefused != nil {
			s.opts.StreamRefused()
		}
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%d timeline streams are open here, the most allowed (max_streams); close one, or raise max_streams", s.opts.MaxStreams))
	}
	defer s.streams.Add(-1)
	tl := s.stats
	if t := s.host().Windows(); t != nil {
		tl = t
	}
	period := tl.Period()
	interval := period
	if iv := req.Msg.GetInterval(); iv != nil {
		if err := iv.CheckValid(); err != nil || iv.AsDuration() < 0 || iv.AsDuration() > maxInterval {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("interval %v: want a duration from 0 to %v", iv.AsDuration(), maxInterval))
		}
		interval = max(interval, iv.AsDuration())
	}
	class, model := req.Msg.GetClass(), req.Msg.GetModel()
	var last int64
	// provisional holds the windows sent before they were final, oldest first: each is sent
	// once more when the source says it became final, and forgotten when the source no longer
	// returns it (aged out, or a source that serves only its newest window).
	var provisional []int64
	send := func() error {
		after := last
		if len(provisional) > 0 {
			after = provisional[0] - 1
		}
		ws := tl.Windows(after)
		var out, fresh []*llmtapv1.TimelineWindow
		var kept []int64
		for _, w := range ws {
			seq := w.GetSeq()
			if seq > last {
				fresh = append(fresh, w)
				continue
			}
			if !slices.Contains(provisional, seq) {
				continue
			}
			if w.GetFinal() {
				out = append(out, w) // the final version of a window sent provisional
			} else {
				kept = append(kept, seq)
			}
		}
		provisional = kept[max(0, len(kept)-maxProvisional):]
		if interval > period && len(fresh) > 1 {
			fresh = fresh[len(fresh)-1:]
		}
		for _, w := range append(out, fresh...) {
			if seq := w.GetSeq(); seq > last {
				last = seq
				if !w.GetFinal() {
					provisional = append(provisional, seq)
				}
			}
			w = s.decorate(ctx, w, class, model)
			if err := stream.Send(&llmtapv1.StreamTimelineResponse{Window: w}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := send(); err != nil {
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := send(); err != nil {
				return err
			}
		}
	}
}

// decorate returns w filtered to class and model, with the shadow loads' state added when
// there are any, copying the shared window first when it changes anything.
func (s *Service) decorate(ctx context.Context, w *llmtapv1.TimelineWindow, class, model string) *llmtapv1.TimelineWindow {
	var shadow *llmtapv1.ShadowState
	if w.GetShadow() == nil {
		if sh := s.host().Shadow(); sh != nil {
			if st, err := sh.Status(ctx); err == nil && (len(st.GetLoads()) > 0 || st.GetGuard() != nil) {
				shadow = st
			}
		}
	}
	if class == "" && model == "" && shadow == nil {
		return w
	}
	w = proto.Clone(w).(*llmtapv1.TimelineWindow)
	if class != "" || model != "" {
		kept := w.Series[:0]
		for _, se := range w.Series {
			if (class == "" || se.Class == class) && (model == "" || se.Model == model) {
				kept = append(kept, se)
			}
		}
		w.Series = kept
	}
	if shadow != nil {
		w.Shadow = shadow
	}
	return w
}

// shadow returns the shadow control, or the error that there is none (or that this endpoint
// is read-only when write is set).
func (s *Service) shadow(write bool) (Shadow, error) {
	if write && s.opts.ReadOnly {
		return nil, errReadOnly
	}
	if sh := s.host().Shadow(); sh != nil {
		return sh, nil
	}
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New(s.opts.NoShadow))
}

var errReadOnly = connect.NewError(connect.CodePermissionDenied, errors.New("this endpoint is read-only; control shadow load and recording through Caddy's admin listener"))

// ShadowStart starts the shadow load.
func (s *Service) ShadowStart(ctx context.Context, req *connect.Request[llmtapv1.ShadowStartRequest]) (*connect.Response[llmtapv1.ShadowStartResponse], error) {
	sh, err := s.shadow(true)
	if err != nil {
		return nil, err
	}
	l, err := sh.Start(ctx, req.Msg.GetName())
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.ShadowStartResponse{Load: l}), nil
}

// ShadowStop stops the shadow load.
func (s *Service) ShadowStop(ctx context.Context, req *connect.Request[llmtapv1.ShadowStopRequest]) (*connect.Response[llmtapv1.ShadowStopResponse], error) {
	sh, err := s.shadow(true)
	if err != nil {
		return nil, err
	}
	l, err := sh.Stop(ctx, req.Msg.GetName())
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.ShadowStopResponse{Load: l}), nil
}

// ShadowSetRate changes the shadow load's rate.
func (s *Service) ShadowSetRate(ctx context.Context, req *connect.Request[llmtapv1.ShadowSetRateRequest]) (*connect.Response[llmtapv1.ShadowSetRateResponse], error) {
	sh, err := s.shadow(true)
	if err != nil {
		return nil, err
	}
	l, err := sh.SetRate(ctx, req.Msg.GetName(), req.Msg.GetRate())
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.ShadowSetRateResponse{Load: l}), nil
}

// ShadowStatus reports the shadow load's state.
func (s *Service) ShadowStatus(ctx context.Context, req *connect.Request[llmtapv1.ShadowStatusRequest]) (*connect.Response[llmtapv1.ShadowStatusResponse], error) {
	sh, err := s.shadow(false)
	if err != nil {
		return nil, err
	}
	st, err := sh.Status(ctx)
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.ShadowStatusResponse{State: st}), nil
}

func (s *Service) recording(write bool) (Recording, error) {
	if write && s.opts.ReadOnly {
		return nil, errReadOnly
	}
	rc := s.host().Recording()
	if rc == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New(s.opts.NoRecording))
	}
	return rc, nil
}

// RecordingStart starts the runtime recording.
func (s *Service) RecordingStart(ctx context.Context, req *connect.Request[llmtapv1.RecordingStartRequest]) (*connect.Response[llmtapv1.RecordingStartResponse], error) {
	rc, err := s.recording(true)
	if err != nil {
		return nil, err
	}
	r, err := rc.Start(ctx, req.Msg)
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.RecordingStartResponse{Recording: r}), nil
}

// RecordingStop stops the runtime recording.
func (s *Service) RecordingStop(ctx context.Context, req *connect.Request[llmtapv1.RecordingStopRequest]) (*connect.Response[llmtapv1.RecordingStopResponse], error) {
	rc, err := s.recording(true)
	if err != nil {
		return nil, err
	}
	r, err := rc.Stop(ctx)
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.RecordingStopResponse{Stopped: r}), nil
}

// RecordingStatus lists the recordings.
func (s *Service) RecordingStatus(ctx context.Context, req *connect.Request[llmtapv1.RecordingStatusRequest]) (*connect.Response[llmtapv1.RecordingStatusResponse], error) {
	rc, err := s.recording(false)
	if err != nil {
		return nil, err
	}
	rs, err := rc.Status(ctx)
	if err != nil {
		return nil, codeOf(err)
	}
	return connect.NewResponse(&llmtapv1.RecordingStatusResponse{Recordings: rs}), nil
}

// codeOf gives a control error its Connect code.
func codeOf(err error) error {
	var ce *connect.Error
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, ErrInvalid):
		return connect.NewError(connect.CodeInvalidArgument, err)
	case errors.Is(err, ErrState):
		return connect.NewError(connect.CodeFailedPrecondition, err)
	case errors.Is(err, ErrNotFound):
		return connect.NewError(connect.CodeNotFound, err)
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	return connect.NewError(connect.CodeInternal, err)
}

var _ llmtapv1connect.TapServiceHandler = (*Service)(nil)

// ServeHost serves one request of the service's handler h (from Handler) for a host whose
// config can be unloaded while a stream runs; ends is done when that happens (nil: never).
//
// A timeline stream then ends: a host that replaces its server on reload (Caddy does, for its
// admin listener and its sites) waits for its connections to go idle, which a stream never
// does; ending it lets the old server stop at once and the client reconnect to the new one. A
// stream's read deadline is lifted once its request is in (Caddy's admin server reads requests
// under a 10 s deadline that stays on the connection and would end a stream after 10 s), and
// a writer whose wrappers hide Flush (Caddy's admin routes get one) gets it back through
// http.ResponseController, which Connect needs for streams.
func ServeHost(h http.Handler, w http.ResponseWriter, r *http.Request, ends context.Context) {
	if r.URL.Path == StreamProcedure {
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
		if ends != nil {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(ends, cancel)()
			r = r.WithContext(ctx)
		}
	}
	h.ServeHTTP(flushWriter{w}, r)
}

// flushWriter adds Flush to a ResponseWriter whose wrappers hide it.
type flushWriter struct{ http.ResponseWriter }

func (f flushWriter) Flush() { _ = http.NewResponseController(f.ResponseWriter).Flush() }

func (f flushWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
