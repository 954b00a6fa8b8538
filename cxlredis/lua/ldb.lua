-- The Lua side of a SCRIPT DEBUG session (cxlredis/ldb.py, Redis's LDB): the line hook
-- that stops the script where the session says, and what the debugger does with the
-- script's frames (print, eval, trace) and values (redis.debug). The session is Python:
-- it reads the client's commands and keeps the breakpoints; it hands back here what
-- needs Lua. Loaded by lupa as the sandbox is, so the sandbox's error handler takes
-- these frames for its own, never for the script's.
--
-- Arguments: the sandbox's engine, sdscatrepr (_resp.quoted), and the session's
-- functions. Returns the debugger engine.run takes: {hook, breakpoint, debug, error}.
local engine, quoted, at_line, next_command, log, log_trimmed, log_source_line, breakpoint,
      debug_line, pushed_error = ...

local getinfo, getlocal = debug.getinfo, debug.getlocal
local concat, format, find, sub = table.concat, string.format, string.find, string.sub
local globals = engine.globals

local OURS = getinfo(1, "S").source       -- the sandbox's frames and these (lupa names both so)
local MAX_DEPTH = 10                      -- Redis's LUA_MINSTACK / 2
local TOO_DEEP = "<max recursion level reached! Nested table?>"

-- Redis's ldbCatStackValue: a value as the debugger shows it.
local function shown(value, level)
    if level == MAX_DEPTH then return TOO_DEEP end
    level = level + 1
    local kind = type(value)
    if kind == "string" then
        return quoted(value)
    elseif kind == "number" then
        return format("%g", value)
    elseif kind == "boolean" or kind == "nil" then
        return tostring(value)
    elseif kind == "table" then
        -- an array while the keys are 1, 2, 3... in next's order; else [key]=value pairs
        local items, pairs, expected = {}, {}, 1
        for key, item in next, engine.contents(value) do
            local text = shown(item, level)
            if items ~= nil and key ~= expected then items = nil end
            if items ~= nil then items[expected] = text end
            pairs[expected] = "[" .. shown(key, level) .. "]=" .. text
            expected = expected + 1
        end
        return "{" .. concat(items or pairs, "; ") .. "}"
    elseif value == globals.cjson.null then
        return '"light-userdata@(nil)"'     -- Redis's cjson.null, a NULL light userdata
    end
    -- a function, a thread, a userdata: its address (the sandbox names its Python functions)
    local text = globals.tostring(value)
    return '"' .. globals.type(value) .. "@" .. sub(text, find(text, ": ", 1, true) + 2) .. '"'
end

-- The frames from the one stopped in up to the script's top, as the debugger reads them
-- when it stops (what it evals cannot change a local): {info, locals = {{name, value}}}.
-- C functions and the sandbox's own frames are left out (Redis's are all C functions).
local function stack()
    local frames, level = {}, 3           -- 1: here, 2: the hook, 3: where the script stopped
    while true do
        local info = getinfo(level, "nSlf")
        if info == nil or info.func == engine.run then return frames end
        if info.what ~= "C" and info.source ~= OURS then
            local locals, i = {}, 1
            while true do
                local name, value = getlocal(level, i)
                if name == nil then break end
                locals[i] = {name, value}
                i = i + 1
            end
            frames[#frames + 1] = {info = info, locals = locals}
        end
        level = level + 1
    end
end

-- print: every local of the frame stopped in, or the first variable of that name from
-- there up (KEYS and ARGV are the globals).
local function print_variables(frames, name)
    if name == nil then
        local count = 0
        for _, variable in ipairs(frames[1].locals) do
            if not find(variable[1], "(*temporary)", 1, true) then
                log_trimmed("<value> " .. variable[1] .. " = " .. shown(variable[2], 0))
                count = count + 1
            end
        end
        if count == 0 then log("No local variables in the current context.") end
        return
    end
    for _, frame in ipairs(frames) do
        for _, variable in ipairs(frame.locals) do
            if variable[1] == name then
                log_trimmed("<value> " .. shown(variable[2], 0))
                return
            end
        end
    end
    if name == "KEYS" or name == "ARGV" then
        log_trimmed("<value> " .. shown(globals[name], 0))
    else
        log("No such variable.")
    end
end

-- What an error raised in evaluated code says. (Redis's child crashes on one that is not
-- a string; here a table says its err.)
local function error_text(err)
    if type(err) == "table" and type(rawget(err, "err")) == "string" then return err.err end
    return globals.tostring(err)
end

-- eval: code as an expression (its value), else as a statement, in the scripts' globals.
local function evaluate(code)
    local chunk, err = globals.loadstring("return " .. code, "@ldb_eval")
    if chunk == nil then chunk, err = globals.loadstring(code, "@ldb_eval") end
    if chunk == nil then
        log("<error> " .. err)
        return
    end
    local ok, result = globals.xpcall(chunk, function(raised) return raised end)
    if ok then
        log_trimmed("<retval> " .. shown(result, 0))
    else
        log("<error> " .. error_text(result))
    end
end

local function trace(frames)
    for index, frame in ipairs(frames) do
        local info = frame.info
        if find(info.short_src, "user_script", 1, true) then
            log((index == 1 and "In " or "From ") .. (info.name or "top level") .. ":")
            log_source_line(info.currentline)
        end
    end
end

-- The line hook. The session says whether to stop there and, while stopped, which
-- command needs Lua; nil goes on. (No count hook: a Lua hook's own instructions use up
-- the count, so most count events would be lost; the session's time limit is checked
-- at every line instead.)
local function hook()
    local info = getinfo(2, "Sl")
    if info.source == OURS then return end     -- the sandbox's lines: Redis's are C
    local command, argument = at_line(info.currentline, find(info.short_src, "user_script", 1, true) ~= nil)
    local frames = nil
    while command ~= nil do
        if command == "eval" then
            evaluate(argument)
        else
            frames = frames or stack()
            if command == "print" then print_variables(frames, argument) else trace(frames) end
        end
        command, argument = next_command()
    end
end

return {
    hook = hook,
    breakpoint = breakpoint,
    error = pushed_error,
    debug = function(...)
        local parts = {}
        for i = 1, select("#", ...) do parts[i] = shown((select(i, ...)), 0) end
        debug_line(concat(parts, ", "))
    end,
}
