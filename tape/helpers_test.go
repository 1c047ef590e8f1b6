package tape

import "time"

func timeParse(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }
