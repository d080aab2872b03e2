package controllercmd

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
)

// Log formats and levels of --log-format and --log-level.
const (
	LogFormatJSON    = "json"
	LogFormatText    = "text"
	LogLevelInfo     = "info"
	LogLevelDebug    = "debug"
	DefaultLogFormat = LogFormatJSON
	DefaultLogLevel  = LogLevelInfo
)

// NewLogger returns a structured logger writing JSON or text lines to w;
// level debug shows V(1) messages.
func NewLogger(w io.Writer, format, level string) logr.Logger {
	lvl := slog.LevelInfo
	if level == LogLevelDebug {
		lvl = slog.Level(-1)
	}
	hopts := &slog.HandlerOptions{Level: lvl, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		// logr's V(1) is slog level -1: call it DEBUG, not DEBUG+3.
		if l, ok := a.Value.Any().(slog.Level); ok && len(groups) == 0 && a.Key == slog.LevelKey && l < slog.LevelInfo {
			a.Value = slog.StringValue("DEBUG")
		}
		return a
	}}
	var h slog.Handler = slog.NewJSONHandler(w, hopts)
	if format == LogFormatText {
		h = slog.NewTextHandler(w, hopts)
	}
	return logr.FromSlogHandler(h)
}

// checkLog validates --log-format and --log-level.
func checkLog(format, level string) []error {
	var errs []error
	switch format {
	case LogFormatJSON, LogFormatText:
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want json or text", format))
	}
	switch level {
	case LogLevelInfo, LogLevelDebug:
	default:
		errs = append(errs, fmt.Errorf("--log-level %q: want info or debug", level))
	}
	return errs
}
