this is not a trace at all
