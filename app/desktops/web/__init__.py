"""Web pages on a desktop: kiosk Chromium and the page contract over a private DevTools pipe.

- `cdp`: the Chrome DevTools Protocol over `--remote-debugging-pipe` (`CdpPipe`, `WebPage`);
- `kiosk`: Chromium's command line, starting it with the pipe's ends held here, and the
  page contract's calls (`getTasks`, `evaluateTask`, `reset`, `getState`).

Both backends' guests use it (the local one directly, a VM's through `remote.ssh_web`),
so it imports none of `local`, `remote` and `libvirt` (an import-linter contract holds
it): a local browser's sandbox comes in as a `kiosk.Spawner`.
"""
