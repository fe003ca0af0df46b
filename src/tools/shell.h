// exec_shell_command: /bin/sh -c in the call's working directory, in its own process group, with a
// timeout and an output cap. Not confined to the tools folder (see RunShell in shell.cpp), which is why
// "all" leaves it out. Internal to the tools layer; RunShellStreaming (builtin_tools.h) is defined in
// shell.cpp too.
#pragma once

#include "core/status.h"
#include "tools/builtin_tools.h"
#include "tools/confine.h"

namespace lazyslot::tools::internal {

// exec_shell_command, not streamed: {"plain_text_response": output, then "[exit code: N]" and any notes},
// a {"error"} JSON when the shell could not run, or a Status for malformed params.
Result<Json> ExecTool(const BuiltinToolsConfig& config, const Place& place, const Json& p);

}  // namespace lazyslot::tools::internal
