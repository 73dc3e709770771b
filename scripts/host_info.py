# SPDX-License-Identifier: Apache-2.0
"""What benchmark records say about the machine they ran on."""
import platform


def cpu_name(fallback="unknown"):
    """The CPU's model name from /proc/cpuinfo (the platform's name for it elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or fallback
