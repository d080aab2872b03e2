package inject

// Severity of a finding, as in the KRM functions results.
type Severity string

// Severities, most severe first.
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
