package plugins

import (
	"math"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// Serve serves impl as an ipcfuzz plugin and returns when the host closes the
// connection, after closing impl. It is the whole main of a plugin:
//
//	func main() { plugins.Serve(ops.NewLocal(info, myModel)) }
//
// Nothing may be written to stdout before Serve: the first line on stdout is
// the go-plugin handshake. Once Serve runs, stdout and stderr are forwarded to
// the host, which keeps them out of its own stdout. Run by hand (without the
// host's cookie) the program says it is a plugin and exits with status 1.
func Serve(impl ops.Impl) {
	logger := newLogger()
	ServeServer(NewServer(impl), logger)
	if err := impl.Close(); err != nil {
		logger.Error("closing the implementation", "error", err)
	}
}

// ServeServer serves srv, a raw implementation of the protocol, as an ipcfuzz
// plugin and returns when the host closes the connection. Serve is the usual
// entry point; ServeServer is for implementations that speak the protocol
// themselves (and for tests that must send what an ops.Impl cannot say). A nil
// logger means hclog JSON on stderr, which the host parses and re-levels.
func ServeServer(srv ipcfuzzv1.ImplServer, logger hclog.Logger) {
	if logger == nil {
		logger = newLogger()
	}
	go exitWithHost(logger, os.Getppid(), 250*time.Millisecond)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: HandshakeConfig(),
		Plugins:         PluginSet(srv),
		GRPCServer:      NewGRPCServer,
		Logger:          logger,
	})
}

// exitWithHost ends the plugin when its host is gone (its parent changes:
// the host was killed, even with SIGKILL, and could not stop it), so that no
// plugin, and nothing the plugin holds, outlives a dead host.
func exitWithHost(logger hclog.Logger, host int, every time.Duration) {
	for range time.Tick(every) {
		if os.Getppid() != host {
			logger.Warn("the host is gone; exiting", "host", host)
			os.Exit(3)
		}
	}
}

// NewGRPCServer is the gRPC server factory of ipcfuzz plugins: go-plugin's
// options plus message size limits raised from gRPC's 4 MiB default to
// math.MaxInt32 in both directions, so large batches and snapshots fit in one
// call.
func NewGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	opts = append(opts,
		grpc.MaxRecvMsgSize(math.MaxInt32),
		grpc.MaxSendMsgSize(math.MaxInt32),
	)
	return grpc.NewServer(opts...)
}

// newLogger is the plugin's logger: JSON lines on the real stderr, created
// before plugin.Serve swaps os.Stderr for a pipe, so the host receives them
// as structured log entries rather than as raw stderr.
func newLogger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "ipcfuzz-plugin",
		Level:      hclog.Info,
		Output:     os.Stderr,
		JSONFormat: true,
	})
}
