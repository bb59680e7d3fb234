/* A shared library that is not a tool: it exports no kreplay_configure. */
int kreplay_not_a_tool(void) { return 42; }
