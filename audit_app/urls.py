from django.urls import path

from audit_app import views

app_name = "audit"

urlpatterns = [
    path("", views.audit_page, name="trail"),
    path("export.csv", views.audit_export_csv, name="export-csv"),
    path("export.jsonl", views.audit_export_jsonl, name="export-jsonl"),
]
