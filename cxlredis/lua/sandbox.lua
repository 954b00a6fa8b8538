-- The scripting environment of Redis 7.0 on a stock Lua 5.1 (lupa.lua51), loaded once
-- per runtime by cxlredis/scripting.py, which passes its hooks and gets back the
-- functions it drives a script with.
--
-- What a script sees is a read-only global table: Redis's allowed builtins, its
-- libraries and the redis.* API. Stock Lua has no read-only tables (Redis patches its
-- Lua for them), so every table a script can reach that all scripts share is a proxy
-- whose writes fail; rawset, load and loadstring are wrapped so they cannot get around
-- the proxies (Redis 7.0 offers no getfenv or setfenv). Nothing a script does survives it, so scripts of
-- different tenants, which share this one runtime, cannot reach each other.
--
-- Replies cross the boundary as RESP: redis.call gets the command's reply as bytes
-- and parses it here into Lua values, and a script's result is encoded here into the
-- reply for its caller, both by Redis's conversion rules.

-- The Python side's functions (scripting.Scripts): the redis.* functions that may raise
-- are Python ones, which Lua sees as C functions, so a script's `return redis.call(...)`
-- is no tail call and its error still names the script's line, as in Redis.
-- Then Redis's libraries besides Lua's own (bit, struct, cjson, cmsgpack: name → table
-- of Python functions) and cjson.null, a userdata that stands for JSON's null.
local api_call, api_pcall, api_sha1hex, api_log, api_setresp, api_set_repl, api_random,
      api_randomseed, interrupted, script_resp_of, unwrap, version, version_num,
      libraries, null = ...

local error, type, tostring, tonumber, select, rawget, pairs, next =
      error, type, tostring, tonumber, select, rawget, pairs, next
local raw_pcall, raw_rawset, raw_setfenv, raw_loadstring, raw_load, xpcall =
      pcall, rawset, setfenv, loadstring, load, xpcall
local setmetatable, getmetatable = setmetatable, getmetatable
local sethook, gethook, getinfo = debug.sethook, debug.gethook, debug.getinfo
local raw_getmetatable, raw_setmetatable = debug.getmetatable, debug.setmetatable
local concat, format, find, sub = table.concat, string.format, string.find, string.sub
local floor = math.floor

local READONLY = "Attempt to modify a readonly table"
local PRELUDE = getinfo(1, "S").source        -- frames of this file are not the script's

-- ---- errors ----------------------------------------------------------------

-- An error as a table {err = "CODE message"}: a "-CODE message" reply keeps its code, a
-- bare message gets ERR (Redis's luaPushErrorBuff).
local function error_table(text)
    local code, message = "ERR", text
    if sub(text, 1, 1) == "-" then
        local space = find(text, " ", 1, true)
        if space then
            code, message = sub(text, 2, space - 1), sub(text, space + 1)
        else
            message = sub(text, 2)
        end
    end
    message = message:gsub("^[\r\n]+", ""):gsub("[\r\n]+$", "")
    return {err = code .. " " .. message}
end

-- Where the script raised an error: the first frame from level on that is neither C
-- nor this file.
local function script_frame(level)
    local info
    repeat
        info = getinfo(level, "nSl")
        level = level + 1
    until info == nil or (info.what ~= "C" and info.source ~= PRELUDE)
    return info
end

-- An error a Python function raised (userdata) as the Lua value it stands for, a message
-- placed at the script's line as luaL_error places it; any other error as it is.
local function lua_error_value(err, info)
    if type(err) ~= "userdata" then return err end
    local value, positioned = unwrap(err)
    if positioned and info ~= nil then
        value = sub(info.source, 2) .. ":" .. info.currentline .. ": " .. value
    end
    return value
end

-- tostring without a __tostring: the hook is off once a script is over, so no code of the
-- script may run then.
local function raw_tostring(value)
    local meta = raw_getmetatable(value)
    if meta == nil or type(value) ~= "table" then return tostring(value) end
    raw_setmetatable(value, nil)
    local text = tostring(value)
    raw_setmetatable(value, meta)
    return text
end

-- xpcall's handler: the error as a new plain table, {err = message, where the script
-- raised it}. It reads the script's error with raw access only: a metamethod of it would
-- run with no hook, out of SCRIPT KILL's reach.
local function on_error(err)
    sethook()        -- the script is over: a kill's line hook must not fire in here
    local info = script_frame(3)
    err = lua_error_value(err, info)
    local fault = {}
    if type(err) == "table" then
        local message = rawget(err, "err")
        local kind = type(message)
        fault.err = (kind == "string" or kind == "number") and tostring(message)
                    or "ERR " .. raw_tostring(message or err)
        fault.ignore_error_stats_update = rawget(err, "ignore_error_stats_update")
    else
        fault.err = "ERR " .. tostring(err)
    end
    if info ~= nil then
        fault.source = info.source
        fault.line = info.currentline
    end
    return fault
end

-- ---- read-only tables ------------------------------------------------------

local proxies = setmetatable({}, {__mode = "k"})

local function refuse()
    error(READONLY, 2)
end

local function readonly(backing)
    local proxy = setmetatable({}, {__index = backing, __newindex = refuse, __metatable = false})
    proxies[proxy] = backing
    return proxy
end

local function copy(t)
    local c = {}
    for k, v in pairs(t) do c[k] = v end
    return c
end

-- ---- RESP → Lua (redis.call's reply) ----------------------------------------

local parse

local function parse_line(s, pos)
    local eol = find(s, "\r\n", pos, true)
    return sub(s, pos + 1, eol - 1), eol + 2
end

-- The value of the reply at pos, and where the next one starts. A null is false in
-- RESP2 (nil in RESP3), a status {ok=}, an error {err=}, a RESP3 type a tagged table.
parse = function(s, pos)
    local kind = sub(s, pos, pos)
    local line, after = parse_line(s, pos)
    if kind == "$" or kind == "=" then
        local n = tonumber(line)
        if n < 0 then return false, after end
        local body = sub(s, after, after + n - 1)
        if kind == "=" then
            return {verbatim_string = {format = sub(body, 1, 3), string = sub(body, 5)}}, after + n + 2
        end
        return body, after + n + 2
    elseif kind == ":" then
        return tonumber(line), after
    elseif kind == "+" then
        return {ok = line}, after
    elseif kind == "-" then
        local t = error_table("-" .. line)
        t.ignore_error_stats_update = true
        return t, after
    elseif kind == "*" or kind == "~" or kind == "%" or kind == "|" or kind == ">" then
        local n = tonumber(line)
        if n < 0 then return false, after end
        local items, value, key = {}, nil, nil
        if kind == "|" then                     -- attributes: skipped, the reply follows
            for _ = 1, 2 * n do _, after = parse(s, after) end
            return parse(s, after)
        end
        for j = 1, n do
            if kind == "%" then
                key, after = parse(s, after)
                value, after = parse(s, after)
                items[key] = value
            elseif kind == "~" then
                value, after = parse(s, after)
                items[value] = true
            else
                value, after = parse(s, after)
                items[j] = value
            end
        end
        if kind == "%" then return {map = items}, after end
        if kind == "~" then return {set = items}, after end
        return items, after
    elseif kind == "_" then
        return nil, after
    elseif kind == "#" then
        return line == "t", after
    elseif kind == "," then
        return {double = tonumber(line)}, after
    elseif kind == "(" then
        return {big_number = line}, after
    end
    error("unparsable reply")
end

-- ---- Lua → RESP (the script's reply) ---------------------------------------

local MAX_DEPTH = 1000

local function one_line(text)
    return (text:gsub("[\r\n]", " "))
end

local function format_double(x)
    if x == math.huge then return "inf" elseif x == -math.huge then return "-inf" end
    return format("%.17g", x)
end

-- (long long) of a Lua number, as C converts it (x86 answers LLONG_MIN out of range).
local function integer_text(x)
    if x ~= x or x >= 9223372036854775807 or x < -9223372036854775808 then
        return "-9223372036854775808"
    end
    local whole = x < 0 and -floor(-x) or floor(x)
    if whole == 0 then return "0" end        -- (long long) of -0.5 is 0, not -0
    return format("%.0f", whole)
end

local encode

-- Append the reply of v to out; resp is the caller's protocol, script_resp the one the
-- script chose with redis.setresp (it decides what a boolean means).
encode = function(v, out, resp, script_resp, depth)
    local t = type(v)
    local n = #out
    if depth > MAX_DEPTH then
        out[n + 1] = "-ERR reached lua stack limit\r\n"
    elseif t == "string" then
        out[n + 1] = "$" .. #v .. "\r\n"
        out[n + 2] = v
        out[n + 3] = "\r\n"
    elseif t == "boolean" then
        if script_resp == 2 then
            out[n + 1] = v and ":1\r\n" or (resp == 2 and "$-1\r\n" or "_\r\n")
        elseif resp == 2 then
            out[n + 1] = v and ":1\r\n" or ":0\r\n"
        else
            out[n + 1] = v and "#t\r\n" or "#f\r\n"
        end
    elseif t == "number" then
        out[n + 1] = ":" .. integer_text(v) .. "\r\n"
    elseif t == "table" then
        local field = rawget(v, "err")
        if type(field) == "string" then
            out[n + 1] = "-" .. one_line(field) .. "\r\n"
            return
        end
        field = rawget(v, "ok")
        if type(field) == "string" then
            out[n + 1] = "+" .. one_line(field) .. "\r\n"
            return
        end
        field = rawget(v, "double")
        if type(field) == "number" then
            local text = format_double(field)
            out[n + 1] = resp == 3 and ("," .. text .. "\r\n") or ("$" .. #text .. "\r\n" .. text .. "\r\n")
            return
        end
        field = rawget(v, "big_number")
        if type(field) == "string" then
            local text = one_line(field)
            out[n + 1] = resp == 3 and ("(" .. text .. "\r\n") or ("$" .. #text .. "\r\n" .. text .. "\r\n")
            return
        end
        field = rawget(v, "verbatim_string")
        if type(field) == "table" then
            local fmt, text = rawget(field, "format"), rawget(field, "string")
            if type(fmt) == "string" and type(text) == "string" then
                if resp == 3 then
                    out[n + 1] = "=" .. (#text + 4) .. "\r\n" .. sub(fmt, 1, 3) .. ":" .. text .. "\r\n"
                else
                    out[n + 1] = "$" .. #text .. "\r\n" .. text .. "\r\n"
                end
                return
            end
        end
        field = rawget(v, "map")
        if type(field) == "table" then
            local head, count = n + 1, 0
            out[head] = ""
            for key, value in next, field do
                encode(key, out, resp, script_resp, depth + 1)
                encode(value, out, resp, script_resp, depth + 1)
                count = count + 1
            end
            out[head] = resp == 3 and ("%" .. count .. "\r\n") or ("*" .. 2 * count .. "\r\n")
            return
        end
        field = rawget(v, "set")
        if type(field) == "table" then
            local head, count = n + 1, 0
            out[head] = ""
            for key in next, field do
                encode(key, out, resp, script_resp, depth + 1)
                count = count + 1
            end
            out[head] = (resp == 3 and "~" or "*") .. count .. "\r\n"
            return
        end
        local head, j = n + 1, 1
        out[head] = ""
        while true do
            local item = rawget(v, j)
            if item == nil then break end
            encode(item, out, resp, script_resp, depth + 1)
            j = j + 1
        end
        out[head] = "*" .. (j - 1) .. "\r\n"
    else
        out[n + 1] = resp == 2 and "$-1\r\n" or "_\r\n"
    end
end

-- ---- the redis.* API -------------------------------------------------------

local redis = {
    call = api_call,
    pcall = api_pcall,
    sha1hex = api_sha1hex,
    log = api_log,
    setresp = api_setresp,
    set_repl = api_set_repl,
    REDIS_VERSION = version,
    REDIS_VERSION_NUM = version_num,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
}

-- The debugger of the script running under SCRIPT DEBUG (lua/ldb.lua's), nil otherwise.
local debugger = nil

-- An error table made by a redis.* function, which a debugging session shows while it
-- steps (Redis's luaPushError logs it).
local function pushed_error(text)
    if debugger ~= nil then debugger.error(text) end
    return error_table(text)
end

function redis.error_reply(...)
    local s = ...
    if select("#", ...) ~= 1 or type(s) ~= "string" then
        return pushed_error("wrong number or type of arguments")
    end
    return pushed_error(sub(s, 1, 1) == "-" and s or "-" .. s)
end

function redis.status_reply(...)
    local s = ...
    if select("#", ...) ~= 1 or type(s) ~= "string" then
        return pushed_error("wrong number or type of arguments")
    end
    return {ok = s}
end

function redis.replicate_commands() return true end
function redis.breakpoint() return debugger ~= nil and debugger.breakpoint() end
function redis.debug(...)
    if debugger ~= nil then debugger.debug(...) end
end

-- ---- the globals a script sees ---------------------------------------------

-- A table that reads through lookup(name) and refuses writes; reading a name that is
-- not there is an error naming it, as Redis's globals do.
local function strict(lookup)
    return setmetatable({}, {
        __index = function(_, name)
            local value = lookup(name)
            if value == nil then
                error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
            end
            return value
        end,
        __newindex = refuse,
        __metatable = false,
    })
end

local backing = {}
local globals = strict(function(name) return backing[name] end)
proxies[globals] = backing

local function protected(t)
    return proxies[t] ~= nil
end

for _, name in ipairs({"setmetatable", "assert", "tonumber",
                       "rawequal", "collectgarbage", "pcall", "select",
                       "unpack", "gcinfo", "rawget", "ipairs", "_VERSION", "error"}) do
    backing[name] = _G[name]
end

-- Redis's pcall hands back an error table's message, not the table.
backing.pcall = function(f, ...)
    local function settle(ok, ...)
        if ok then return true, ... end
        local err = ...
        if type(err) == "userdata" then err = unwrap(err) end
        if type(err) == "table" and type(rawget(err, "err")) == "string" then
            err = err.err
        end
        return false, err
    end
    return settle(raw_pcall(f, ...))
end

-- The Python functions a script reaches (redis.call, math.random, ...) are lupa userdata.
-- To a script they are functions, as Redis's C functions are, and the metatable every
-- Python object shares stays out of its reach: a script that changed it would see other
-- scripts' calls. The runtime's attribute filter refuses their attributes.
local function python_object(value)
    return type(value) == "userdata" and value ~= null
end

local function_names = setmetatable({}, {__mode = "k"})

backing.type = function(value)
    if python_object(value) then return "function" end
    return type(value)
end

backing.tostring = function(value)
    if not python_object(value) then return tostring(value) end
    local name = function_names[value]
    if name == nil then           -- an address of its own, as "function: 0x..." has
        name = "function" .. sub(tostring({}), 6)
        function_names[value] = name
    end
    return name
end

backing.getmetatable = function(value)
    if python_object(value) then return nil end
    return getmetatable(value)
end

-- A handler sees the error a Python function raised as Lua would, not the exception.
backing.xpcall = function(f, handler)
    return xpcall(f, function(err)
        return handler(lua_error_value(err, script_frame(3)))
    end)
end

-- A read-only table is an empty proxy: pairs and next walk what it stands for, as they
-- walk Redis's read-only tables (the walk hands out values, never the table itself).
local function table_argument(name, t, given)
    if type(t) ~= "table" then
        local got = given == 0 and "no value" or backing.type(t)
        error("bad argument #1 to '" .. name .. "' (table expected, got " .. got .. ")", 3)
    end
    return proxies[t] or t
end

backing.next = function(...)
    local t, key = ...
    return next(table_argument("next", t, select("#", ...)), key)
end

backing.pairs = function(...)
    local t = ...
    if table_argument("pairs", t, select("#", ...)) == t then return next, t, nil end
    return backing.next, t, nil
end

backing.rawset = function(t, k, v)
    if protected(t) then error(READONLY, 0) end
    return raw_rawset(t, k, v)
end

local function in_sandbox(f)
    if f then raw_setfenv(f, globals) end
    return f
end

-- Source text only: Redis's Lua parses every chunk as text, so a precompiled chunk
-- (crafted bytecode reads and writes any memory in Lua 5.1) is a syntax error there. A
-- leading space makes stock Lua parse it as text too, the same error at the same place.
local function as_text(chunk)
    if sub(chunk, 1, 1) == "\27" then return " " .. chunk end
    return chunk
end

backing.loadstring = function(s, name)
    if type(s) == "string" then
        s, name = as_text(s), name or s
    end
    local f, err = raw_loadstring(s, name)
    return in_sandbox(f), err
end

-- Reading stops at the reader's first error, which load hands back as Redis's does: as
-- an error table, placed at the script's line if load made it.
backing.load = function(...)
    local reader, name = ...
    if type(reader) ~= "function" then
        local got = select("#", ...) == 0 and "no value" or type(reader)
        error("bad argument #1 to 'load' (function expected, got " .. got .. ")", 2)
    end
    local pieces = {}
    local ok, err = raw_pcall(function()
        while true do
            local piece = reader()
            if piece == nil or piece == "" then return end
            if type(piece) == "number" then
                piece = tostring(piece)
            elseif type(piece) ~= "string" then
                local info = script_frame(2)
                error(sub(info.source, 2) .. ":" .. info.currentline .. ": reader function must return a string", 0)
            end
            pieces[#pieces + 1] = piece
        end
    end)
    if not ok then
        if type(err) ~= "table" then err = error_table(tostring(err)) end
        return nil, err
    end
    local f
    f, err = raw_loadstring(as_text(concat(pieces)), name or "=(load)")
    return in_sandbox(f), err
end

local math_lib = copy(math)
math_lib.random, math_lib.randomseed = api_random, api_randomseed
backing.math = readonly(math_lib)
-- string.rep of an empty string loops n times in C, where no hook reaches it: a large n
-- would keep the server busy past any SCRIPT KILL. Its result is "" whatever n is. The
-- arguments are checked here, so that an error names the script's line as Lua's does.
local string_lib = copy(string)
local rep = string.rep
string_lib.rep = function(...)
    local s, n = ...
    local given = select("#", ...)
    local function refuse(i, expected, value)
        if getinfo(2, "n").namewhat == "method" then i = i - 1 end
        local got = given < i and "no value" or type(value)
        error(format("bad argument #%d to 'rep' (%s expected, got %s)", i, expected, got), 3)
    end
    if type(s) ~= "string" and type(s) ~= "number" then refuse(1, "string", s) end
    if tonumber(n) == nil then refuse(2, "number", n) end
    if s == "" then return "" end
    local repeated = rep(s, n)
    return repeated
end
backing.string = readonly(string_lib)
backing.table = readonly(copy(table))
-- debug.sethook hooks one coroutine only: a coroutine starts with the hook of the code
-- that made it, so SCRIPT KILL and the load timeout reach a loop inside it too (Redis's
-- hook is a C one, which every coroutine shares).
local function with_hook(f, name)
    if type(f) ~= "function" then
        error("bad argument #1 to '" .. name .. "' (Lua function expected)", 3)
    end
    local hook, mask, count = gethook()
    return function(...)
        if hook then sethook(hook, mask, count) end
        return f(...)
    end
end

local coroutine_lib = copy(coroutine)
local raw_create, raw_wrap = coroutine.create, coroutine.wrap
coroutine_lib.create = function(f) return raw_create(with_hook(f, "create")) end
coroutine_lib.wrap = function(f) return raw_wrap(with_hook(f, "wrap")) end
-- A coroutine's error as pcall hands it back: a Python function's is the Lua value
-- it stands for, placed where the coroutine raised it.
local function resumed(co, ok, ...)
    if ok then return true, ... end
    local err = ...
    if type(err) == "userdata" then
        local level, info = 0, nil
        repeat
            info = getinfo(co, level, "Sl")
            level = level + 1
        until info == nil or info.what ~= "C"
        err = lua_error_value(err, info)
    end
    return false, err
end
local raw_resume = coroutine.resume
coroutine_lib.resume = function(co, ...) return resumed(co, raw_resume(co, ...)) end
backing.coroutine = readonly(coroutine_lib)
backing.redis = readonly(redis)
for name, library in pairs(libraries) do
    backing[name] = readonly(library)
end
backing._G = globals
-- ("x"):upper() reaches the string table through its metatable: show the proxy there.
getmetatable("").__metatable = backing.string

-- ---- functions (FUNCTION LOAD, FCALL) ----------------------------------------

-- A library's code runs once, when FUNCTION LOAD loads it, and sees Redis's library
-- API only: redis.register_function, redis.log and its levels, and the version; any
-- other name is an error, as a missing global is. The functions it registers run
-- later with the scripts' globals (not KEYS and ARGV: they get keys and args as
-- arguments). Both are the environment below, whose backing is switched for a load.

local loading = nil      -- the library being loaded: {known = flags, names = {}, list = {}}

local function string_like(v)
    return type(v) == "string" or type(v) == "number"
end

local function fail(message)
    error(error_table(message))
end

-- A flags table's names, each one of the known flags in any case (Redis's strcasecmp).
local function read_flags(flags)
    local found = {}
    local j = 1
    while true do
        local flag = flags[j]
        if flag == nil then return found end
        if not string_like(flag) then fail("unknown flag given") end
        local canonical = loading.known[string.lower(tostring(flag))]
        if canonical == nil then fail("unknown flag given") end
        found[#found + 1] = canonical
        j = j + 1
    end
end

local function register_function(...)
    local count = select("#", ...)
    if count < 1 or count > 2 then fail("wrong number of arguments to redis.register_function") end
    local name, callback, description, flags
    if count == 1 then
        local named = ...
        if type(named) ~= "table" then
            fail("calling redis.register_function with a single argument is only applicable to Lua table " ..
                 "(representing named arguments).")
        end
        for key, value in next, named do
            if not string_like(key) then
                fail("named argument key given to redis.register_function is not a string")
            end
            local option = string.lower(tostring(key))
            if option == "function_name" then
                if not string_like(value) then
                    fail("function_name argument given to redis.register_function must be a string")
                end
                name = tostring(value)
            elseif option == "description" then
                if not string_like(value) then
                    fail("description argument given to redis.register_function must be a string")
                end
                description = tostring(value)
            elseif option == "callback" then
                if type(value) ~= "function" then
                    fail("callback argument given to redis.register_function must be a function")
                end
                callback = value
            elseif option == "flags" then
                if type(value) ~= "table" then
                    fail("flags argument to redis.register_function must be a table representing " ..
                         "function flags")
                end
                flags = read_flags(value)
            else
                fail("unknown argument given to redis.register_function")
            end
        end
        if name == nil then fail("redis.register_function must get a function name argument") end
        if callback == nil then fail("redis.register_function must get a callback argument") end
    else
        local first, second = ...
        if not string_like(first) then fail("first argument to redis.register_function must be a string") end
        if type(second) ~= "function" then
            fail("second argument to redis.register_function must be a function")
        end
        name, callback = tostring(first), second
    end
    if not find(name, "^[%w_]+$") then fail(loading.name_error) end
    if loading.names[name] then fail("Function already exists in the library") end
    loading.names[name] = true
    loading.list[#loading.list + 1] = {name, callback, description or false, flags or {}}
end

local library_redis = {
    register_function = register_function,
    log = api_log,
    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
    REDIS_VERSION = version,
    REDIS_VERSION_NUM = version_num,
}
local library_api = {redis = strict(function(name) return library_redis[name] end)}

local function_backing = backing
local function_globals = strict(function(name) return function_backing[name] end)
proxies[function_globals] = backing

-- ---- running a script ------------------------------------------------------

-- The count hook: every 100k instructions, ask whether SCRIPT KILL came. Once it has,
-- fire at every line so no pcall can swallow the kill.
local function count_hook()
    if interrupted() then
        sethook(count_hook, "l")
        error(error_table("Script killed by user with SCRIPT KILL..."))
    end
end

local engine = {}

-- redis.call's reply as a Lua value, and whether it is an error; failed: an error
-- before the command ran (error text, counted already).
function engine.parse(raw, failed)
    local value
    if failed then
        value = error_table(raw)
        value.ignore_error_stats_update = true
    else
        value = parse(raw, 1)
    end
    return value, type(value) == "table" and rawget(value, "err") ~= nil
end

engine.error_table = error_table
-- The debugger evaluates its code in the scripts' globals, and shows what a read-only
-- table stands for.
engine.globals = globals
function engine.contents(t) return proxies[t] or t end

-- A script body compiled as a function of the sandbox, or nil and the compile error; as
-- source text, as Redis's Lua reads every chunk (never precompiled bytecode).
function engine.compile(body, chunk)
    local f, err = raw_loadstring(as_text(body), chunk)
    if f == nil then return nil, err end
    raw_setfenv(f, globals)
    return f, false
end

local function reply_of(resp, script_resp, ok, result)
    local out = {}
    if ok then
        encode(result, out, resp, script_resp, 0)
        return concat(out), false, nil, nil, false
    end
    -- a raised error: its message, and where the script raised it
    local message = type(result) == "table" and rawget(result, "err")
    if type(message) ~= "string" then message = "ERR " .. tostring(message or result) end
    message = one_line(message)
    if type(result) ~= "table" then return message, true, nil, nil, false end
    return message, true, rawget(result, "source"), rawget(result, "line"),
           rawget(result, "ignore_error_stats_update") == true
end

-- Run f with KEYS and ARGV (EVAL's globals); returns the reply (RESP) and false or, for
-- an error the script raised, its message, true, the source and line it came from, and
-- whether the error was counted already (a failed redis.call's).
-- Run a script (KEYS and ARGV its globals) or, as_function, a function (keys and args
-- its arguments); the reply for the caller's protocol resp. Under SCRIPT DEBUG, the
-- session's debugger (lua/ldb.lua) hooks every line instead of the kill hook.
function engine.run(f, keys, argv, resp, hooked, as_function, session_debugger)
    local body = f
    if as_function then
        body = function() return f(keys, argv) end
    else
        backing.KEYS, backing.ARGV = keys, argv
    end
    debugger = session_debugger
    if debugger ~= nil then
        sethook(debugger.hook, "l")
    elseif hooked then
        sethook(count_hook, "", 100000)
    end
    local ok, result = xpcall(body, on_error)
    sethook()
    debugger = nil
    backing.KEYS, backing.ARGV = nil, nil
    return reply_of(resp, script_resp_of(), ok, result)
end

-- FUNCTION LOAD: run a library's code so it registers its functions. Its registrations
-- ({name, callback, description or false, flags}), or nil and the error. known maps each
-- flag's lower-case name to its own; elapsed_ms() is how long the load has run.
function engine.load_library(body, known, name_error, elapsed_ms, timeout_ms)
    local f, err = raw_loadstring(body, "@user_function")
    if f == nil then return nil, "Error compiling function: " .. err end
    raw_setfenv(f, function_globals)
    loading = {known = known, name_error = name_error, names = {}, list = {}}
    function_backing = library_api
    local function timeout_hook()
        if elapsed_ms() > timeout_ms then
            sethook(timeout_hook, "l")
            fail("FUNCTION LOAD timeout")
        end
    end
    sethook(timeout_hook, "", 100000)
    local ok, result = xpcall(f, on_error)
    sethook()
    function_backing = backing
    local registered = loading.list
    loading = nil
    if not ok then return nil, "Error registering functions: " .. result.err end
    return registered, nil
end

return engine
