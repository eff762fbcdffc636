-- expect: os_execute.lua:3: attempt to index a nil value (global 'os')
-- Configs run in a sandbox: no os, io, require, load.
os.execute("touch /tmp/weft-sandbox-escape")
return { family = "row_reduce" }
