package plugins

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// The go-plugin handshake every ipcfuzz plugin and host agree on. A plugin
// built against another protocol version, or for another product (another
// cookie), is refused at launch.
const (
	// ProtocolVersion is the version of the ipcfuzz.v1.Impl protocol.
	ProtocolVersion = 2
	// MagicCookieKey is the environment variable the host sets for the plugin.
	MagicCookieKey = "IPCFUZZ_PLUGIN"
	// MagicCookieValue is the value of MagicCookieKey. It guards against
	// running a plugin by hand (not a security measure).
	MagicCookieValue = "8b1c0f4e-ipcfuzz-impl-v1"
	// PluginName is the name the implementation is dispensed under.
	PluginName = "impl"
)

// HandshakeConfig returns the go-plugin handshake of ipcfuzz plugins.
func HandshakeConfig() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// GRPCPlugin is the go-plugin glue of the protocol. On the plugin side it
// registers Impl; on the host side it dispenses a raw
// ipcfuzzv1.ImplClient (plugins/host wraps it in an ops.Impl). It speaks gRPC
// only.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is what the plugin serves; nil on the host side.
	Impl ipcfuzzv1.ImplServer
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return fmt.Errorf("plugins: GRPCPlugin has no Impl to serve")
	}
	ipcfuzzv1.RegisterImplServer(s, p.Impl)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin. It returns an ipcfuzzv1.ImplClient.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return ipcfuzzv1.NewImplClient(c), nil
}

// PluginSet returns the go-plugin plugin set serving srv under PluginName.
// Hosts pass PluginSet(nil).
func PluginSet(srv ipcfuzzv1.ImplServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: srv}}
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)
