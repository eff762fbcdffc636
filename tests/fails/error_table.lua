-- expect: error_table.lua
-- An error raised with a table value: the message must still name the config.
error({ reason = "unsupported" })
