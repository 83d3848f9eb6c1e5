"""RFB (VNC): DeskLoop's asyncio client and the recording proxy that turns a person's
viewer input into actions.

- `client`: the interface for a connection (`connect`, `VNCClient`, `VNCSession`,
  `VncEndpoint`), assembled from
- `wire`: the protocol's bytes (handshake, VNC authentication, messages, encodings),
  shared by the client and the proxy;
- `framebuffer`: the screen the updates are applied to, `frame()` and `settle()`;
- `input`: GUI actions as key and pointer events (QEMU's Shift and paced typing);
- `proxy`: the recording proxy.

May import only `app.core`. The desktops build on the client; the person agent and
authoring by demonstration build on the proxy.
"""
