package main

import "github.com/spf13/cobra"

// newRulesHelpTopic is "tapedeck help rules": the rules file's format, for
// the --rules flag of record, replay and debug. It runs nothing (cobra
// lists it under "Additional help topics").
func newRulesHelpTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "The rules file of --rules (record, replay, debug): match, action, schedule",
		Long: `A rules file (YAML; JSON is YAML too) makes record (stdio shim and HTTP
proxy), replay and debug fault the session on purpose. Each rule has a name,
a match, an action and a schedule; the first rule that matches acts, unless
it says continue: true.

  seed: 42                # optional: the random source of probability schedules (--seed overrides)
  mode: audit             # optional: every rule only says what it would do
  rules:
    - name: echo-fails
      match:              # every key optional; all must hold
        phase: request    # request | response | notification | server_request
        dir: send         # send (client to server) | recv
        method: tools/call          # or a list
        tool: echo                  # the call's tool, prompt or resource (also: target)
        server: everything
        when: 'params.arguments.message == "boom"'   # an expr-lang boolean
      action: error
      error: {code: -32001, message: injected}       # or {tool: "text"}: a tool result with isError
      schedule: {first: 2}        # always | {first: N} | {every: N} | {after: N} | {probability: P}

match may also be the expression alone: match: 'method == "ping"'. The
expression reads params, result, error, id, method, target, phase, dir,
server and session; one that fails on a message (a member it lacks) is no
match, said once a rule on stderr.

Actions and what they take:
  block                     drop the message
  error       error:        answer a request with a JSON-RPC error (or a tool
                            failure) without sending it on; turn a response into one
  modify      set:, delete:, patch:   JSON pointers from the message's top;
                            patch: is an RFC 6902 JSON Patch
  delay       delay:        250ms, or a range 100ms..2s; at most 10m. A message
                            still held when the session ends is recorded as
                            dropped, with the reason
  respond     respond:      {result: ...} or {tape: other.jsonl}: answer a
                            request without sending it on
  duplicate                 send the message twice
  disconnect                cut the connection before the message
  log         log:          a line on stderr; the message goes on
A rule's mode: audit says what it would do and does nothing.

Schedules count the rule's matches: first: N, every: N (the Nth, 2Nth, ...),
after: N (from the N+1th on), or probability: P in (0, 1], drawn from the
rule's own generator seeded by --seed (else the file's seed:, else 1) and its
name, so the same session with the same seed faults the same messages.

Anchors and aliases work across rules (&m in one rule, *m in another). A bad
file fails at start with the file, the line and what was expected.

What a rule did is on the tape, in each record's _meta.injected: the rule,
the action, the original bytes of a changed message, an answer it made up,
whether the message was dropped.`,
		Example: `  tapedeck record --rules faults.yaml -o faulty.jsonl -- node server.js
  tapedeck record --rules faults.yaml --upstream http://127.0.0.1:3001/mcp
  tapedeck replay --rules faults.yaml session.jsonl
  tapedeck stats faulty.jsonl      # "injected by rules: N records", per rule`,
	}
}
