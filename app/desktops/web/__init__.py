"""Web pages on a desktop: kiosk Chromium and the page contract over a private DevTools pipe.

- `cdp`: the Chrome DevTools Protocol over `--remote-debugging-pipe` (`CdpPipe`, `WebPage`);
- `kiosk`: Chromium's command line, starting it with the pipe's ends held here, and the
  page contract's calls (`getTasks`, `evaluateTask`, `reset`, `getState`).

Both backends' guests use it (the local one directly, a VM's through `remote.ssh_web`);
it imports `local` only for the sandbox a local browser is started in, and never
`remote` or `libvirt` (an import-linter contract holds it).
"""
