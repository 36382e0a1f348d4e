#!/usr/bin/env python3
"""Start a pi-workflows run over the host socket, follow its events, print its result.

Usage: python3 start_run.py <workflow> [input-json]   (the host must be running:
`pi-workflows host start`). Standard library only."""
import json, os, socket, sys, time, uuid

def socket_path():
    state = os.environ.get("PI_WORKFLOWS_STATE_DIR") or os.path.join(
        os.environ.get("PI_CODING_AGENT_DIR") or os.path.expanduser("~/.pi/agent"), "workflows")
    return os.path.join(state, "host.sock")

class Host:
    def __init__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(socket_path())
        self.reader = self.sock.makefile("rb")
        self.client_id, self.epoch = f"py-{os.getpid()}", None

    def request(self, operation, payload=None, **fields):
        frame = {"schema": "pi-workflows.host-request.v1", "requestId": f"req-{uuid.uuid4()}",
                 "clientId": self.client_id, "operation": operation, **fields}
        if payload is not None: frame["payload"] = payload
        if self.epoch is not None: frame["hostEpoch"] = self.epoch
        self.sock.sendall(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
        answer = json.loads(self.reader.readline())  # one line per answer, at most 1 MiB
        self.epoch = answer["hostEpoch"]
        if answer["outcome"] not in ("accepted", "adopted"):
            sys.exit(f"{operation}: {answer['outcome']}: {answer['error']['message']}")
        return answer["receipt"]

def main():
    workflow, raw = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "{}"
    host = Host()
    run = host.request("run.start", {"workflow": workflow, "cwd": os.getcwd(),
                                     "input": json.loads(raw)},
                       idempotencyKey=f"start-{uuid.uuid4()}")["run"]
    print(f"started {run['runId']}", file=sys.stderr)
    cursor = 0
    while True:
        status = host.request("run.status", {"eventsAfter": cursor}, runId=run["runId"])
        for event in status.get("events", []):
            print(f"  {event['type']} {event.get('nodeId', '')}".rstrip(), file=sys.stderr)
        cursor = status.get("lastEventSeq", cursor)
        run = status["run"]
        if run["state"] in ("completed", "failed", "timed_out", "cancelled"): break
        time.sleep(0.2)
    print(json.dumps({"state": run["state"], "output": run.get("output"), "error": run.get("error")}))
    sys.exit(0 if run["state"] == "completed" else 6)

if __name__ == "__main__":
    main()
