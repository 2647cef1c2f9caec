# Jupyter server settings of the course, read when this folder is on JUPYTER_CONFIG_PATH
# (`make lab` does that). Chapter sources (MyST .md notebooks) open read-only as notebooks:
# see course_contents.py.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

c = get_config()  # noqa: F821 - provided by Jupyter when it loads this file
c.ServerApp.contents_manager_class = "course_contents.CourseContentsManager"
