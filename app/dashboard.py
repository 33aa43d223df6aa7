"""lpstudy's dashboard: how p shapes convergence and stability. The entry of `streamlit run`
(`lpstudy dashboard --storage URL` starts it): the page frame, built once for every page (page
config, the database and the study chooser in the sidebar), then the chosen page from views/."""

from pathlib import Path

import streamlit as st

from common import study_chooser
from tables import NARROW_WINDOW_CSS

# The favicon is a file of the app, served by the dashboard itself: a :material/...: one is fetched from a
# font server (fonts.gstatic.com), which fails offline.
st.set_page_config(page_title="lpstudy", page_icon=str(Path(__file__).with_name("icon.png")), layout="wide")
PAGES = [
    # Material icons (Streamlit draws them from its own font): emoji draw as empty boxes where no emoji font is.
    # The URL paths of the pages before st.navigation (app/pages/N_Name.py), so links keep working.
    st.Page("views/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("views/effect_of_p.py", title="Effect of p", icon=":material/show_chart:", url_path="Effect_of_p"),
    st.Page("views/convergence.py", title="Convergence", icon=":material/timeline:", url_path="Convergence"),
    st.Page("views/stability.py", title="Stability", icon=":material/health_and_safety:", url_path="Stability"),
    st.Page("views/lens.py", title="Stability lens", icon=":material/biotech:", url_path="Stability_lens"),
    st.Page("views/compare.py", title="Compare", icon=":material/balance:", url_path="Compare"),
    st.Page("views/trials.py", title="Trials", icon=":material/table_view:", url_path="Trials"),
    st.Page("views/export.py", title="Export", icon=":material/download:", url_path="Export"),
]
current = st.navigation(PAGES)
st.html(NARROW_WINDOW_CSS)  # a style only: nothing drawn
study_chooser(current.title)
current.run()
