package inject

// Severity of a finding. The KRM function reports it as the result
// severity of the same name (fn maps each to kyaml's framework constant).
type Severity string

// The severities of findings. A workload's findings are listed in the
// byte order of their severity (error, info, warning), each severity in the
// order found.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding is something the filter reports about one object.
type Finding struct {
	Severity Severity
	Message  string
	Object   Object
}

// String renders the finding for a terminal or a log.
func (f Finding) String() string {
	return string(f.Severity) + ": " + f.Object.String() + ": " + f.Message
}
