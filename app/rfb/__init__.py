"""RFB (VNC): DeskLoop's asyncio client (`client`) and the recording proxy that turns a
person's viewer input into actions (`proxy`).

May import only `app.core`. The desktops build on the client; the person agent and
authoring by demonstration build on the proxy.
"""
